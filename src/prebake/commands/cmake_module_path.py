"""``prebake cmake-module-path``: the folder holding ``Prebake.cmake`` (for CMAKE_MODULE_PATH)."""

from __future__ import annotations

import argparse

NAME = "cmake-module-path"
HELP = "print the folder of prebake's CMake module (Prebake.cmake: prebake_fetch())"
ORDER = 73


def add_arguments(p: argparse.ArgumentParser) -> None:
    del p


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    import prebake.cmake

    print(Path(prebake.cmake.__file__).resolve().parent)
    return 0
