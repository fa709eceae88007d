"""The C extension under AddressSanitizer and UndefinedBehaviorSanitizer, on a mutation corpus.

``scripts/fuzz_scan.py`` builds ``_scan.c`` with ``-fsanitize=address,undefined`` out of tree
(into the test cache), runs a child Python with gcc's libasan preloaded, and feeds it mutants
of real ELF objects (both classes and byte orders: x86-64, i686, aarch64, big-endian MIPS and
PowerPC64), a shared library, Emscripten's wasm objects and ar archives (GNU, ``/SYM64/``, BSD,
thin, emar's), each in a buffer
that ends at its last byte. Every mutant must give the same facts, symbols or error through
the C path and the Python path, and the sanitizers must report nothing (they abort the child
at the first report). This is the same command as the long run in docs/measurements.md,
bounded to about two minutes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests import support

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fuzz_scan.py"
MUTANTS = 8_000  # about two minutes on the shared 2-core test machine


def test_every_mutant_reads_alike_both_ways_with_no_sanitizer_report() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--mutants", str(MUTANTS), "--cache",
         str(support.CACHE / "fuzz-scan")],
        capture_output=True, text=True, timeout=900)
    report = proc.stderr
    assert "Sanitizer" not in report and "runtime error" not in report, report[-4000:]
    assert proc.returncode == 0, proc.stdout[-3000:] + report[-3000:]
    import json

    summary = json.loads(proc.stdout)
    assert summary["mutants"] == MUTANTS and summary["differ"] == [], summary
    assert summary["seeds"] >= 16 and summary["edge_cases"] > 0
    # the corpus reaches both outcomes: facts read, and refusals (mutants the readers reject)
    assert 0 < summary["errors"] < MUTANTS, summary
