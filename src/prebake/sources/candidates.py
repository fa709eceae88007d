"""What a source's name resolves to: the URLs that may serve it, or why a mirror cannot.

The values between ``prebake.sources.mirrors`` (which makes them from the machine's
configuration) and ``prebake.sources.cache`` / ``download`` (which download them), and the one
method a resolver has; here so that the cache needs nothing of the resolver's module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from prebake.redact import redact_text
from prebake.registry_refs import is_reference


@dataclass(frozen=True)
class Candidate:
    """A URL that may serve the file, and what its index says about it."""

    url: str  # may carry credentials: shown only through prebake.redact
    said: str  # the configuration or index that named it
    sha256: str = ""  # the digest the index states, "" when it states none
    integrity: str = ""  # npm's dist.integrity (Subresource Integrity, sha512-…)
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Unserved:
    """A mirror that cannot serve the file (no such file in its index, not reachable)."""

    why: str


Step = Candidate | Unserved


class Resolves(Protocol):
    def expand(self, name: str) -> Iterable[Step]: ...

    def describe(self, name: str) -> str: ...


class AsWritten:
    """Every name is the one URL it spells (what a cache made without a workspace does)."""

    def expand(self, name: str) -> Iterable[Step]:
        if is_reference(name):
            return [Unserved(f"{name}: a registry reference needs the workspace's resolver "
                             "(prebake.sources.mirrors.Resolver)")]
        return [Candidate(name, "the URL itself")]

    def describe(self, name: str) -> str:
        return name


def served(resolver: Resolves, urls: Sequence[str], failures: list[str],
           log: Callable[[str], None]) -> Iterator[Candidate]:
    """Each URL that may serve the file ``urls[0]`` names (then the recipe's own mirrors), in
    order; a mirror that cannot serve it goes to ``failures`` and the log instead."""
    name = urls[0] if urls else "?"
    for step in (s for u in urls for s in resolver.expand(u)):
        if isinstance(step, Candidate):
            yield step
        else:
            failures.append(step.why)
            log(redact_text(f"{name}: {step.why}; trying the next mirror"))
