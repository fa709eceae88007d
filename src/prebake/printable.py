"""Text a command wrote, made fit to print: the one sanitiser for everything of a command's
output (or of an input file) that prebake shows on a terminal or in a CI log — a failure's
log tail, the live progress lines, the build's table and summary, the step summary.

A compiler's output is data, never instructions to the terminal or the CI runner:

- no escape sequence survives, whole with its payload (up to the end of its line: an
  unterminated one hides nothing after it): CSI (colours, ``ESC[2J`` clearing the
  screen, cursor-up and erase-line rewriting what was shown), OSC (``ESC]0;`` the window
  title, ``ESC]52;`` the clipboard, ``ESC]8;`` a link), DCS/APC/PM/SOS strings, their 8-bit C1
  forms (``\\x9b``, ``\\x9d``), and the two-byte ``ESC`` ones;
- no other control character but tab and newline: a CR alone (which returns to the line's
  start to overwrite it) becomes a newline, CR LF one newline, the rest (NUL, BEL, backspace,
  DEL, C1) go; nor the Unicode bidirectional overrides and isolates, which reorder what is
  shown (``U+202E``);
- a line that GitHub's runner would take for a workflow command — ``::`` first after blanks
  (``::add-mask::``, ``::error::``, ``::stop-commands::``) or ``##[`` anywhere (the old
  syntax) — gets a backslash that breaks the prefix (``\\::error::``), visible and harmless.

Markup is the printer's business: what this returns is plain text, printed with rich's
``markup=False`` or as a ``rich.text.Text``, never parsed as markup.
"""

from __future__ import annotations

import re

_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI … final byte
    r"|\x1b[]PX^_][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # OSC/DCS/SOS/PM/APC … BEL or ST
    r"|\x1b[ -/]*[0-~]?"  # the other ESC sequences (ESC 7, ESC c, ESC ( B)
    r"|\x9b[0-?]*[ -/]*[@-~]?"  # C1 CSI
    r"|[\x90\x98\x9d-\x9f][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?")  # C1 string controls
# what is left of C0 (but tab and newline), DEL, C1, and the bidirectional formatting marks
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# GitHub's workflow commands: `::name …::` first on a line after blanks, `##[name]` anywhere
_WORKFLOW = re.compile(r"^([ \t]*)::", re.MULTILINE)
# (``##\[`` too: rich's ``escape`` of ``##[``, which it prints as ``##[`` again)
_WORKFLOW_V1 = re.compile(r"##(\\?)\[")


def printable(text: str) -> str:
    """``text`` with no escape sequence, no control character but tab and newline, and no
    workflow command (see the module's doc)."""
    text = _SEQUENCE.sub("", text.replace("\r\n", "\n")).replace("\r", "\n")
    text = _CONTROL.sub("", text)
    return _WORKFLOW_V1.sub(r"#\\#\1[", _WORKFLOW.sub(r"\1\\::", text))


def printable_line(text: str, fallback: str = "") -> str:
    """The first line of ``text`` that holds something, :func:`printable` (``fallback`` when
    none does): a progress line, one per event."""
    return next((line for line in printable(text).splitlines() if line.strip()), fallback)
