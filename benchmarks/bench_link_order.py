"""link-order over every Debian libabsl-dev static archive vs the real g++ link that uses it.

What a user would otherwise do is try links until one works; prebake computes the order from the
archives' symbols. The bar: computing the order costs less than one real link with it.
Prints the median times and the ratios (prebake / g++; below 1.0 means prebake is faster), for
the library call and for the whole ``prebake link-order`` process (interpreter start included).

    .venv/bin/python benchmarks/bench_link_order.py [--repeat N]
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import median_time

from prebake.link.order import compute_link_order

ABSL = sorted(Path("/usr/lib/x86_64-linux-gnu").glob("libabsl_*.a"))
CONSUMER = """\
#include <absl/container/flat_hash_map.h>
#include <absl/status/status.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>
#include <absl/synchronization/mutex.h>
#include <absl/time/clock.h>
#include <iostream>
int main() {
  absl::flat_hash_map<std::string, int> m; m["a"] = 1;
  std::vector<std::string> parts = absl::StrSplit("a,b,c", ',');
  absl::Status st = absl::InvalidArgumentError("bad");
  absl::Mutex mu; { absl::MutexLock l(&mu); }
  std::cout << absl::StrCat(parts.size(), m.size()) << st << absl::FormatTime(absl::Now());
}
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    if not ABSL:
        print("libabsl-dev is not installed", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "main.cc").write_text(CONSUMER)
        subprocess.run(["g++", "-std=c++17", "-O1", "-c", "main.cc", "-o", "main.o"], cwd=d,
                       check=True)
        order = compute_link_order(ABSL)
        link_args = shlex.split(order.render("ld"))

        def link() -> None:
            subprocess.run(["g++", "main.o", *link_args, "-o", "prog"], cwd=d, check=True)

        cli = [sys.executable, "-m", "prebake", "link-order", *map(str, ABSL)]

        def run_cli() -> None:
            subprocess.run(cli, cwd=d, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)

        t_api = median_time(lambda: compute_link_order(ABSL), args.repeat)
        t_cli = median_time(run_cli, args.repeat)
        t_link = median_time(link, args.repeat)
    members = sum(order.members.values())
    print(f"{len(ABSL)} archives, {members} members, {len(order.cycles())} cycle(s)")
    print(f"prebake compute_link_order (library call): {t_api * 1000:8.1f} ms")
    print(f"prebake link-order (whole process):        {t_cli * 1000:8.1f} ms")
    print(f"g++ link using that order:                 {t_link * 1000:8.1f} ms")
    print(f"ratio library call / g++ link: {t_api / t_link:.2f}")
    print(f"ratio whole process / g++ link: {t_cli / t_link:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
