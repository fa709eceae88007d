"""CI: the GitHub Actions workflow generated from the plan, and the steps its jobs run."""

from prebake.ci.decide import Decision, decide, decide_from_env

__all__ = ["Decision", "decide", "decide_from_env"]
