"""Secrets out of everything prebake prints, logs or writes: the one place that knows what a
secret looks like.

Two shapes: the userinfo of a URL (``http://user:password@proxy``, ``https://token@host``) and
the value of a variable whose name says it holds one (``GH_TOKEN``, ``AWS_SECRET_ACCESS_KEY``,
``NPM_PASSWORD``, ``SIGNING_KEY``). Build logs, ``build --dry-run`` and ``--json``, error lines,
manifests and provenance all pass what they show through here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

MASK = "***"
# scheme://userinfo@ — userinfo is everything up to the last '@' before the host part
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/\s@?#]*@)")
_SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSW(OR)?D|PASS\b|KEY|CREDENTIAL|AUTH|COOKIE"
                          r"|SESSION)", re.IGNORECASE)
# names that say KEY but locate things, not secrets
_NOT_SECRET = frozenset({"KEYBOARD", "SSH_AUTH_SOCK"})


def is_secret_name(name: str) -> bool:
    """A variable whose name says it holds a credential."""
    upper = name.upper()
    return upper not in _NOT_SECRET and bool(_SECRET_NAME.search(upper))


def redact_text(text: str, *secrets: str | None) -> str:
    """``text`` with URL userinfo masked and each of ``secrets`` (exact strings) removed."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, MASK)
    return _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)


def redact_value(name: str, value: str) -> str:
    """The value of variable ``name`` as it may be shown."""
    if is_secret_name(name):
        return MASK if value else value
    return redact_text(value)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` fit to print: secret variables masked, URL credentials masked."""
    return {k: redact_value(k, v) for k, v in env.items()}


def env_secrets(env: Mapping[str, str]) -> list[str]:
    """The secret values held in ``env`` (to scrub them from free text such as errors)."""
    return [v for k, v in env.items() if is_secret_name(k) and len(v) >= 4]


_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


def redact_json(value: object) -> object:
    """A JSON-like document (manifest, provenance, ``--json`` output) fit to write: every string
    has URL credentials masked; values under an environment-style key (``GH_TOKEN``) that names
    a secret are masked too."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: (MASK if isinstance(k, str) and _ENV_NAME.fullmatch(k)
                    and is_secret_name(k) and isinstance(v, str) and v
                    else redact_json(v))
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_json(v) for v in value]
    return value
