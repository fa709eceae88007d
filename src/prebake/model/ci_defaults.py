"""The CI defaults, read from ``ci_defaults.toml`` beside this module (data, not code).

They live with the workspace because the loader fills a workspace's ``[ci]`` table from them;
``prebake.ci`` reads them from here, so loading a workspace never imports the CI package.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DEFAULTS_FILE = Path(__file__).resolve().parent / "ci_defaults.toml"
_COMMIT = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Action:
    """One action the workflow uses, pinned to a release's commit (``uses: NAME@COMMIT``,
    with the release in a comment beside it)."""

    uses: str
    version: str
    commit: str

    @property
    def ref(self) -> str:
        return f"{self.uses}@{self.commit}"


@dataclass(frozen=True)
class CiDefaults:
    python: str
    timeout_minutes: int
    default_branch: str
    runner: str
    debian_mirror: str
    runner_os: Mapping[str, str]
    actions: Mapping[str, Action]


def _action(key: str, data: Mapping[str, object]) -> Action:
    action = Action(str(data["uses"]), str(data["version"]), str(data["commit"]))
    if not _COMMIT.fullmatch(action.commit):
        # a shipped file: a broken pin is prebake's bug, never a workflow on a movable ref
        raise ValueError(f"{DEFAULTS_FILE}: actions.{key}.commit must be a full 40-hex commit")
    return action


@cache
def ci_defaults() -> CiDefaults:
    data = tomllib.loads(DEFAULTS_FILE.read_text(encoding="utf-8"))
    return CiDefaults(str(data["python"]), int(data["timeout_minutes"]),
                      str(data["default_branch"]), str(data["runner"]),
                      str(data["debian_mirror"]),
                      {str(k): str(v) for k, v in data["runner_os"].items()},
                      {str(k): _action(str(k), v) for k, v in data["actions"].items()})
