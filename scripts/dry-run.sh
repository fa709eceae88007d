# shellcheck shell=bash
# Sourced by scripts/long-leg and scripts/main-job: their --dry-run, which the suite runs
# (tests/integration/test_scripts.py). The caller sets DRY (non-empty: a dry run) and OUT (what
# the run writes; a temporary folder in a dry run).
exec 3>&1  # what a dry run prints reaches the terminal even where a command's output does not

# later COMMAND...: a command that needs what a build makes (a toolchain environment, an asset,
# a program linked against it): run it, or in a dry run print it after checking that its
# program and the repository files it names exist (what it writes, below $OUT, comes later)
later() {
  if [ -z "$DRY" ]; then "$@"; return; fi
  { printf 'would run:'; printf ' %q' "$@"; echo; } >&3
  case "$1" in
    */*) ;;  # a path: a wrapper or a file a build makes
    *) declare -F "$1" >/dev/null || command -v "$1" >/dev/null ||
         { echo "$0: $1 is not installed" >&2; return 1; } ;;
  esac
  local a
  for a in "$@"; do
    a=${a#*=}  # -DCMAKE_TOOLCHAIN_FILE=… names a path too
    case "$a" in
      "$OUT"*|"$PWD/$OUT"*) ;;
      examples/*|scripts/*|"$PWD"/examples/*|"$PWD"/scripts/*)
        [ -e "$a" ] || { echo "$0: $1 names $a, which does not exist" >&2; return 1; } ;;
    esac
  done
}
