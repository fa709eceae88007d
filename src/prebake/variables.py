"""Which of the caller's variables reach a build: the one allow-list, for every environment
prebake starts a compiler, a build command, a probe or a consumer's link in.

Never ``os.environ.copy()``: a caller's exported ``CFLAGS=-flto`` (or ``-mrelaxed-simd``) would
silently change every object the build produces. Only variables that locate tools and caches
pass through; compiler and linker flag variables can come only from the platform profile or the
recipe, and both ``env_unset`` lists remove names even from those. A build unit's environment
is made from this once (``prebake.bake.buildenv``); the toolchain checks and a standalone
``prebake link-test`` start from the same :func:`sanitized`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

# Variables that locate things (tools, home, temp, caches, proxies for downloads), never flags.
ALLOWLIST = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM",
    "TMPDIR", "NODE_PATH", "EM_CACHE", "EM_CONFIG", "ZIG_GLOBAL_CACHE_DIR", "ZIG_LOCAL_CACHE_DIR",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO",
    # a compiler cache changes how fast objects are made, never what they are
    "CCACHE_DIR", "CCACHE_MAXSIZE", "CCACHE_BASEDIR",
    # a toolchain environment's own Emscripten cache (prebake.toolchain.enter: EM_CACHE inside)
    "PREBAKE_ENV_EM_CACHE",
    # an emsdk install: where its emcc finds its own config and node
    "EMSDK", "EMSDK_NODE",
    # platform-specific, each set only where it means something:
    # macOS: the SDK and the Xcode that xcrun and Apple's clang use
    "SDKROOT", "DEVELOPER_DIR",
    # Windows: the system folder and the temporary folders its programs expect
    "SYSTEMROOT", "TMP", "TEMP",
)
# Flag variables: never taken from the caller; listed so the build log can say they were dropped.
FLAG_VARIABLES = (
    "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "LDLIBS", "EMCC_CFLAGS", "EMCC_FORCE_STDLIBS",
    "CC", "CXX", "AR", "RANLIB", "LD", "MAKEFLAGS", "CMAKE_ARGS", "CMAKE_TOOLCHAIN_FILE",
)
# Fixed for reproducible outputs: tools that embed dates read it.
FIXED = {"SOURCE_DATE_EPOCH": "315532800", "LC_ALL": "C", "TZ": "UTC"}
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def sanitized(caller: Mapping[str, str] | None, *,
              platform_env: Mapping[str, str] | None = None,
              recipe_env: Mapping[str, str] | None = None, unset: Iterable[str] = (),
              extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed variables of ``caller`` (this process's environment when None), the
    fixed ones, then the platform's ``env``, the recipe's and prebake's own ``extra``, minus
    ``unset``."""
    caller = os.environ if caller is None else caller
    env = {k: caller[k] for k in ALLOWLIST if k in caller}
    env.update(FIXED)
    env.update(dict(platform_env or {}))
    env.update(dict(recipe_env or {}))
    if extra:
        env.update(extra)
    for name in unset:
        env.pop(name, None)
    env.setdefault("PATH", DEFAULT_PATH)
    return env


def dropped(caller: Mapping[str, str], env: Mapping[str, str]) -> list[str]:
    """Flag variables the caller had set that did not reach the build (for the log)."""
    return [k for k in FLAG_VARIABLES if k in caller and env.get(k) != caller[k]]
