"""What a CI run publishes, decided from the event and ref — one pure function, tested alone.

The rolling ``continuous`` prerelease follows the default branch; a tag push publishes that
tag's release; a pull request (or any other branch) never publishes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from prebake.store.base import DEFAULT_RELEASE

_BRANCH_EVENTS = ("push", "workflow_dispatch", "schedule")


@dataclass(frozen=True)
class Decision:
    event: str
    ref: str
    release: str | None  # None: this run publishes nothing
    reason: str


def decide(event: str, ref: str, default_branch: str) -> Decision:
    if event.startswith("pull_request"):
        return Decision(event, ref, None, "pull requests never publish")
    if ref.startswith("refs/tags/"):
        tag = ref[len("refs/tags/"):]
        if event == "push":
            return Decision(event, ref, tag, f"tag push publishes release {tag!r}")
        return Decision(event, ref, None, f"{event} on a tag does not publish")
    if ref == f"refs/heads/{default_branch}" and event in _BRANCH_EVENTS:
        return Decision(event, ref, DEFAULT_RELEASE,
                        f"the default branch updates the rolling {DEFAULT_RELEASE!r} prerelease")
    return Decision(event, ref, None, f"{ref} is not the default branch ({default_branch})")


def decide_from_env(env: Mapping[str, str], default_branch: str) -> Decision:
    """The same decision from GitHub Actions' own variables."""
    branch = env.get("PREBAKE_DEFAULT_BRANCH") or default_branch
    return decide(env.get("GITHUB_EVENT_NAME", ""), env.get("GITHUB_REF", ""), branch)
