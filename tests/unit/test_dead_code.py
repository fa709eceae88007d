"""No dead code in src/: vulture, configured in pyproject.toml's ``[tool.vulture]`` (paths,
the confidence of 60 % that covers unused functions, methods, classes and variables, and the
names only used by name), finds nothing. A function nobody calls fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests import support


def test_vulture_finds_no_unused_code_in_src() -> None:
    proc = subprocess.run([sys.executable, "-m", "vulture"], cwd=support.ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_check_would_see_a_new_unused_function(tmp_path: Path) -> None:
    """The check can fail: the same configuration on a copy with an uncalled function."""
    module = tmp_path / "extra.py"
    module.write_text("def never_called() -> int:\n    return 1\n")
    proc = subprocess.run([sys.executable, "-m", "vulture", str(module)], cwd=support.ROOT,
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "never_called" in proc.stdout
