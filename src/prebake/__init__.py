"""prebake: build native dependencies per platform, prove their ABI, publish versioned assets.

The package is a library first; ``prebake.cli`` is a thin layer over it. Nothing here prints.
"""

__version__ = "0.1.0"
