"""Recipe command lines with their placeholders filled in (``{src} {prefix} {pins[emsdk]}``…).

A command is an argv tuple or a string split like a shell line (no shell features). A token that
is exactly ``{cc}``/``{cxx}``/``{ar}`` (or ``{release[NAME]}``) expands to the whole argv
(``python -m ziglang cc -target …``, none at all for an empty one); inside a longer token
(``CC={cc}``) the argv is joined with spaces.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from prebake.errors import PrebakeError


@dataclass(frozen=True)
class Context:
    """Values for the placeholders of one recipe build on one platform."""

    values: Mapping[str, str]
    pins: Mapping[str, str]
    argv: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    host_tools: Mapping[str, str] = field(default_factory=dict)  # name -> absolute path
    # ``{release[NAME]}``: the recipe's per-release arguments for the pinned version
    release: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # ``{tools[NAME]}``: one word on PATH per tool (prebake.toolchain.configure)
    tools: Mapping[str, str] = field(default_factory=dict)

    def fill(self, token: str, where: str) -> str:
        scalars = {**self.values, **{k: shlex.join(v) for k, v in self.argv.items()}}
        try:
            return token.format(pins=dict(self.pins), host_tools=dict(self.host_tools),
                                tools=dict(self.tools),
                                release={k: shlex.join(v) for k, v in self.release.items()},
                                **scalars)
        except KeyError as exc:
            raise PrebakeError(f"{where}: unknown placeholder {{{exc.args[0]}}} in {token!r}"
                               ) from None
        except (IndexError, ValueError) as exc:
            raise PrebakeError(f"{where}: bad placeholder in {token!r}: {exc}") from None


def expand(command: Sequence[str] | str, ctx: Context, where: str) -> list[str]:
    """One command as an argv list with every placeholder filled."""
    tokens = shlex.split(command) if isinstance(command, str) else list(command)
    out: list[str] = []
    for tok in tokens:
        bare = tok[1:-1] if tok.startswith("{") and tok.endswith("}") else None
        if bare is not None and bare in ctx.argv:
            out.extend(ctx.argv[bare])
        elif bare is not None and bare.startswith("release[") and bare.endswith("]") \
                and bare[len("release["):-1] in ctx.release:
            out.extend(ctx.release[bare[len("release["):-1]])
        else:
            out.append(ctx.fill(tok, where))
    return out
