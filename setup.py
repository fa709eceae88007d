"""The one compiled part of prebake: the ELF reader's hot loops (``prebake.inspect._scan``).

Everything else is in pyproject.toml. The extension is optional: without a C compiler or
Python's headers the install still succeeds and ``prebake.inspect.elf`` uses its pure-Python
loops, which give the same answers (``tests/unit/test_scan.py`` holds the two together).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "prebake.inspect._scan",
            sources=["src/prebake/inspect/_scan.c"],
            # the probe's constants, shared with hotloops_py, which reads the file at import
            depends=["src/prebake/inspect/_scan_consts.h"],
            extra_compile_args=["-O2", "-std=c11", "-D_GNU_SOURCE"],
            optional=True,
        )
    ]
)
