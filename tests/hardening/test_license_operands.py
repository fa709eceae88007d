"""``allowed_licenses`` is judged operand by operand of the proven SPDX expression, at build and
at ``fetch --contract``: a real library whose bytes say it is under LGPL and GPL parts
(``LGPL-2.1-or-later AND GPL-3.0-or-later``, as its recipe's table maps that text).

``allowed_licenses = ["LGPL-*"]`` had matched the whole text; it must refuse the build, and a
consumer contract of the same must refuse the fetch of an asset built under a contract that
allowed both. An OR whose one choice is allowed passes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests import support

PLATFORM = "linux-x86_64"
RECIPE = """\
from prebake.recipes import Build, Licensed, LicenseString, LocalSource, Outputs, Recipe

RECIPE = Recipe(
    name="dual",
    pin="dual",
    sources=(LocalSource("src"),),
    platforms={{"*": Build(commands=(
        "cmake -E make_directory {{prefix}}/lib {{prefix}}/include",
        "{{cc}} -O2 -fPIC -c {{src}}/dual.c -o {{build}}/dual.o",
        "{{ar}} rcs {{prefix}}/lib/libdual.a {{build}}/dual.o",
        "cmake -E copy {{src}}/dual.h {{prefix}}/include/dual.h",
    ))}},
    outputs=Outputs(libs={{"*": ("lib/libdual.a",)}}, headers=("include/dual.h",)),
    license_check=LicenseString(
        r"libdual license: ([^\\x00]{{1,64}})\\x00", r"(--dual-config[^\\x00]{{0,200}})\\x00",
        (Licensed("LGPL with GPL parts", {spdx!r}),)),
)
"""
SOURCE = ('const char dual_license[] = "libdual license: LGPL with GPL parts";\n'
          'const char dual_config[] = "--dual-config --with-gpl-parts";\n'
          "int dual_add(int a, int b) { return a + b; }\n")


def _workspace(folder: Path, contract: str, spdx: str) -> Path:
    (folder / "recipes" / "dual" / "src").mkdir(parents=True)
    (folder / "prebake.toml").write_text(support.gcc_workspace(
        "licdemo", 'dual = "1.0"', "core", '["dual"]', contract=contract,
        env_unset=("CFLAGS", "LDFLAGS"), more=""))
    (folder / "recipes" / "dual" / "recipe.py").write_text(RECIPE.format(spdx=spdx))
    (folder / "recipes" / "dual" / "src" / "dual.c").write_text(SOURCE)
    (folder / "recipes" / "dual" / "src" / "dual.h").write_text("int dual_add(int, int);\n")
    return folder


def _build(ws: Path) -> subprocess.CompletedProcess[str]:
    proc = support.prebake("-C", ws, "build")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_lgpl_star_refuses_an_lgpl_and_gpl_build(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", 'allowed_licenses = ["LGPL-*"]',
                    "LGPL-2.1-or-later AND GPL-3.0-or-later")
    proc = _build(ws)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ("dual/linux-x86_64: lib/libdual.a is LGPL-2.1-or-later AND GPL-3.0-or-later (its "
            "bytes say 'LGPL with GPL parts'); the contract's allowed_licenses (LGPL-*) "
            "refuses it (GPL-3.0-or-later not allowed), nothing was packaged") in " ".join(
                proc.stderr.split()), proc.stderr
    assert not list(ws.rglob("*.tar.xz"))


def test_fetch_with_lgpl_star_refuses_it_and_an_or_choice_passes(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", 'allowed_licenses = ["LGPL-*", "GPL-3.0-or-later"]',
                    "LGPL-2.1-or-later AND GPL-3.0-or-later")
    proc = _build(ws)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    store = f"file://{ws / 'releases'}"

    def fetch(allowed: str, into: str) -> subprocess.CompletedProcess[str]:
        contract = tmp_path / f"{into}.toml"
        contract.write_text(f"allowed_licenses = {allowed}\n")
        return support.prebake("fetch", "dual==1.0", "--platform", PLATFORM, "--store", store,
                               "--into", tmp_path / into, "--contract", contract,
                               "--lock", tmp_path / f"{into}.lock",
                               env={"PREBAKE_CACHE": str(tmp_path / "cache")})

    refused = fetch('["LGPL-*"]', "lgpl-only")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert ("dual is LGPL-2.1-or-later AND GPL-3.0-or-later; this contract's allowed_licenses "
            "(LGPL-*) refuses it (GPL-3.0-or-later not allowed); nothing was installed"
            ) in " ".join(refused.stderr.split()), refused.stderr
    assert not (tmp_path / "lgpl-only").exists()
    both = fetch('["lgpl-2.1-*", "GPL-3.0-or-later"]', "both")
    assert both.returncode == 0, both.stdout + both.stderr

    # a license with a choice: the SDK takes the allowed one (MIT)
    ws = _workspace(tmp_path / "or", 'allowed_licenses = ["MIT"]', "GPL-3.0-or-later OR MIT")
    proc = _build(ws)
    assert proc.returncode == 0, proc.stdout + proc.stderr
