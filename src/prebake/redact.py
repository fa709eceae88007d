"""Secrets out of everything prebake prints, logs or writes: the one place that knows what a
secret looks like.

These shapes:

- the userinfo of a URL, as Python's urllib reads it: everything up to the *last* ``@`` of the
  authority (``http://user:Secret@77@proxy`` has the password ``Secret@77``), with a scheme or
  without one (``user:pass@proxy:3128`` in ``https_proxy`` is a proxy with credentials to
  urllib, curl and git);
- a query or fragment parameter whose name says it is a credential (``?token=``,
  ``access_token=``, ``X-Amz-Signature=``, ``X-Amz-Credential=``, ``sig=``);
- the value of a variable whose name says it holds one (``GH_TOKEN``, ``AWS_SECRET_ACCESS_KEY``,
  ``NPM_PASSWORD``, ``SIGNING_KEY``), and the whole value of a proxy variable;
- an ``Authorization`` or ``Proxy-Authorization`` header's credentials (``curl -v`` through a
  proxy prints ``> Proxy-Authorization: Basic …``, the base64 of the proxy's user and password),
  after its scheme word;
- a token by its issuer's own shape wherever it stands, a URL path included (GitHub's
  ``ghp_``/``github_pat_``, GitLab's ``glpat-``, npm's ``npm_``, Slack's ``xox?-``, a JWT, an
  AWS access key id), a Telegram bot's ``/bot<id>:<token>``, the last segment of a Slack or
  Discord webhook, and the segment after a path segment named like a secret (``/token/…``);
- each credential the caller knows (``redact_text``'s ``secrets``), as it is and in base64
  at any alignment (inside a Basic header or any other base64 text).

Build logs (prebake's lines and the commands' output), ``build --dry-run`` and ``--json``, the
build's progress lines, error lines, manifests, provenance, the SBOM and reports all pass what
they show through here.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Mapping

MASK = "***"
# scheme://userinfo@ — userinfo runs to the last '@' before the path, query or fragment (what
# urlsplit calls the netloc), never across white space
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/\s?#]*@)")
# an npm registry reference (``npm:onnxruntime-web@1.30.0``, ``npm:@scope/name@2.0.1``: a package
# and its exact version, prebake.registry_refs) reads like user:password@host; it is none
_NPM_REFERENCE = (r"npm:(?:@[a-z0-9~-][a-z0-9._~-]*/)?[a-z0-9~-][a-z0-9._~-]*@[0-9]+\.[0-9]+"
                  r"\.[0-9]+(?:[-+][0-9A-Za-z.+-]*)?(?:$|[\s\"',;)\]>])")
# user:password@host without a scheme, as a word of its own (after a space, '=', a quote, a
# bracket or a comma): a colon before the last '@', and after it a host name (or an IPv6
# address) with an optional port, then the end of the word — so a C++ name (``ns::f@plt``,
# ``std::terminate()@GLIBCXX_3.4``) is not taken for one. (A proxy variable's value is masked
# whole by its name, whatever its host looks like.)
_BARE_USERINFO = re.compile(r"(?:^|(?<=[\s=\"'(\[,<;]))(?!" + _NPM_REFERENCE + r")"
                            r"(?P<info>[^\s/?#@:\"'=]+:(?!:)[^\s/?#]*@)"
                            r"(?=(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]+)?"
                            r"(?:$|[\s/?#\"',;)\]>]))", re.MULTILINE)
# a URL parameter: ?name=value, &name=value, #name=value, ;name=value
_PARAM = re.compile(r"(?P<lead>[?&#;](?P<name>[A-Za-z0-9_.\-\[\]]+)=)(?P<value>[^&#;\s\"'<>]*)")
_SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSW(OR)?D|PASS\b|KEY|CREDENTIAL|AUTH|COOKIE"
                          r"|SESSION)", re.IGNORECASE)
# URL parameters that carry a signature or a credential under another name
_SECRET_PARAM = re.compile(r"(SIGNATURE|^SIG$|CREDENTIAL|^CODE$|PASS|JWT|HMAC|^SAS$)",
                           re.IGNORECASE)
# an Authorization / Proxy-Authorization header, as curl -v, a JSON dump or a command line
# shows it: the scheme word (Basic, Bearer, token, AWS4-HMAC-SHA256, …) kept, the rest of the
# line (or of the quoted value) masked
_AUTH_HEADER = re.compile(r"(?P<lead>(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
                          r"(?:[A-Za-z][A-Za-z0-9-]*[ \t]+(?=\S))?)(?P<value>[^\r\n\"']+)",
                          re.IGNORECASE)
# tokens in their issuers' shapes, anywhere (a URL path included)
_TOKEN_SHAPES = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}"
    r"|npm_[A-Za-z0-9]{30,}|xox[abposr]-[A-Za-z0-9-]{10,}|(?:AKIA|ASIA)[A-Z0-9]{16}"
    r"|eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]+)")
# tokens a URL path carries by its place: a Telegram bot's, a Slack or Discord webhook's last
# segment, the segment after one named like a secret (``/token/VALUE``; ``/tokenizer/`` is no
# such name); looked for inside URLs only (a file path is no credential)
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
_PATH_TOKENS = re.compile(
    r"(?P<lead>/bot[0-9]+:|hooks\.slack\.com/services/[A-Za-z0-9]+/[A-Za-z0-9]+/"
    r"|/api/webhooks/[0-9]+/|/(?:(?:access|auth|private|api|bearer|id)[_-]?)?(?:token|secret"
    r"|key|password|passwd|sig|signature)/)(?P<value>[^/\s?#\"'<>]+)", re.IGNORECASE)
# names that say KEY but locate things, not secrets
_NOT_SECRET = frozenset({"KEYBOARD", "SSH_AUTH_SOCK"})
# http_proxy, HTTPS_PROXY, ALL_PROXY, ftp_proxy…: a URL, with or without a scheme
_PROXY_NAME = re.compile(r"[A-Za-z]*_PROXY", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """A variable whose name says it holds a credential."""
    upper = name.upper()
    return upper not in _NOT_SECRET and bool(_SECRET_NAME.search(upper))


def _secret_param(name: str) -> bool:
    return is_secret_name(name) or bool(_SECRET_PARAM.search(name))


@functools.lru_cache(maxsize=256)
def _base64_cores(secret: str) -> tuple[str, ...]:
    """The base64 text ``secret`` becomes at each of the three alignments it may have inside a
    longer base64 string (``user:password`` in a Basic header, a token after a prefix): the
    characters that depend on its bytes alone, standard and URL-safe alphabets."""
    raw = secret.encode()
    out: list[str] = []
    for k in range(3):
        enc = base64.b64encode(b"\0" * k + raw).decode().rstrip("=")
        start = (4 * k + 2) // 3  # the first characters hold bits of the bytes before it
        end = len(enc) - (1 if (k + len(raw)) % 3 else 0)  # the last, bits of those after
        core = enc[start:end]
        if len(core) >= 8:
            out += [core, core.replace("+", "-").replace("/", "_")]
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _masked(secrets: tuple[str, ...]) -> tuple[str, ...]:
    """What ``secrets`` mask: each one and its base64 cores, longest first."""
    known = [s for s in secrets if s and len(s) >= 4]
    return tuple(sorted({*known, *(c for s in known for c in _base64_cores(s))}, key=len,
                        reverse=True))


# what a text must hold for the token rules to look at it (a build log's lines mostly do not)
_SHAPE_HINTS = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "npm_", "xox",
                "AKIA", "ASIA", "eyJ")
_PATH_HINTS = ("/bot", "hooks.slack", "/api/webhooks", "token/", "secret/", "key/", "passw",
               "sig/", "signature/")


def redact_text(text: str, *secrets: str | None) -> str:
    """``text`` with URL credentials (userinfo with or without a scheme, secret parameters,
    tokens in paths), header credentials and token shapes masked, and each of ``secrets``
    (exact strings of 4 characters or more) removed, as it is and in base64."""
    for s in _masked(tuple(s for s in secrets if s)):
        if s in text:
            text = text.replace(s, MASK)
    if "uthorization" in text or "UTHORIZATION" in text:
        text = _AUTH_HEADER.sub(lambda m: m["lead"] + MASK, text)
    if any(h in text for h in _SHAPE_HINTS):
        text = _TOKEN_SHAPES.sub(MASK, text)
    if "://" in text:
        low = text.lower()
        if any(h in low for h in _PATH_HINTS):
            text = _URL.sub(lambda u: _PATH_TOKENS.sub(lambda m: m["lead"] + MASK, u[0]), text)
    if "@" in text:
        text = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
        text = _BARE_USERINFO.sub(f"{MASK}@", text)
    if "=" in text:
        text = _PARAM.sub(lambda m: m["lead"] + MASK if m["value"] and _secret_param(m["name"])
                          else m[0], text)
    return text


def redact_value(name: str, value: str) -> str:
    """The value of variable ``name`` as it may be shown: a secret variable's is masked whole,
    a proxy's keeps its host (``user:pass@proxy:3128`` shows as ``***@proxy:3128``)."""
    if is_secret_name(name):
        return MASK if value else value
    if _PROXY_NAME.fullmatch(name) and "@" in value and "://" not in value:
        return MASK + "@" + value.rpartition("@")[2]
    return redact_text(value)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` fit to print: secret variables masked, URL credentials masked."""
    return {k: redact_value(k, v) for k, v in env.items()}


def env_secrets(env: Mapping[str, str]) -> list[str]:
    """The secret values held in ``env`` (to scrub them from free text such as errors): every
    value of a secret variable, and the userinfo and password of any URL or proxy setting in
    the others (so a command that prints ``user:pass`` apart from its URL is caught too)."""
    out = [v for k, v in env.items() if is_secret_name(k) and len(v) >= 4]
    for k, v in env.items():
        if "@" not in v or is_secret_name(k):
            continue
        for m in _USERINFO.finditer(v):
            out += _credentials(m["info"][:-1])
        if _PROXY_NAME.fullmatch(k) and "://" not in v:
            out += _credentials(v.rpartition("@")[0])
    return [s for s in dict.fromkeys(out) if len(s) >= 4]


def _credentials(userinfo: str) -> list[str]:
    """``user:password`` and ``password`` (a bare token as the user is the credential)."""
    _user, colon, password = userinfo.partition(":")
    return [userinfo, password] if colon else [userinfo]


_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


def redact_json(value: object, *secrets: str | None) -> object:
    """A JSON-like document (manifest, provenance, SBOM, ``--json`` output) fit to write: every
    string has URL credentials and ``secrets`` masked; values under an environment-style key
    (``GH_TOKEN``) that names a secret are masked too, and a proxy variable's userinfo."""
    if isinstance(value, str):
        return redact_text(value, *secrets)
    if isinstance(value, dict):
        out: dict[object, object] = {}
        for k, v in value.items():
            key = redact_text(k, *secrets) if isinstance(k, str) else k
            if isinstance(k, str) and isinstance(v, str) and (
                    _ENV_NAME.fullmatch(k) or _PROXY_NAME.fullmatch(k)):
                out[key] = redact_text(redact_value(k, v), *secrets)
            else:
                out[key] = redact_json(v, *secrets)
        return out
    if isinstance(value, list | tuple):
        return [redact_json(v, *secrets) for v in value]
    return value
