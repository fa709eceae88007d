"""CI: the GitHub Actions workflow generated from the plan, and the steps its jobs run.

``decide`` and friends load on first use, so reading the CI defaults (``prebake.ci.defaults``,
which the workspace loader needs) does not pull in the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prebake.ci.decide import Decision, decide, decide_from_env

__all__ = ["Decision", "decide", "decide_from_env"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        import importlib

        module = importlib.import_module("prebake.ci.decide")
        # importing the submodule bound ``prebake.ci.decide`` to it: the function wins, as before
        globals().update({n: getattr(module, n) for n in __all__})
        return globals()[name]
    raise AttributeError(f"module 'prebake.ci' has no attribute {name!r}")
