"""CSV cells a spreadsheet shows as text and never runs as a formula (OWASP, "CSV Injection").

prunesim's CSV files carry text a user or an agent chose: transcript and
scenario file names, an agent's commands (trace.csv's ``key``), a policy's
reasons and names. A spreadsheet that opens the file evaluates a cell that
starts with ``=``, ``+``, ``-`` or ``@`` (or a tab or a carriage return before
one) as a formula: ``=HYPERLINK(...)`` in a command would be a live link, and
worse. So, as OWASP advises, every cell written is checked once, as the line
is written:

* a cell that starts (after any spaces) with ``=``, ``+``, ``-``, ``@``, a tab
  or a carriage return gets a single quote before it, which a spreadsheet
  takes for "text" and does not show;
* a cell that starts with a single quote gets one more, so that the rule can
  always be undone;
* a number (``-3``, ``+1.5``, ``-2.5e-07``, ``-inf``) is left as it is: it stays a number.

:func:`recover` undoes it (one leading quote removed); every prunesim reader
does so, and ``prunesim.api.unquote_cell`` does it for pandas
(docs/cli.md, "Output files").
"""

from __future__ import annotations

import re

TRIGGERS = frozenset("=+-@\t\r")
QUOTE = "'"
_FIRST = TRIGGERS | {QUOTE, " "}  # the cells that need a second look (a space may hide a trigger)
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf|nan)\Z")


def neutral(text: str) -> str:
    """``text`` as a cell a spreadsheet shows and never evaluates (see the module docstring); a value that is
    not text (a number the csv module writes) is returned as it is."""
    if not isinstance(text, str) or not text or text[0] not in _FIRST:
        return text
    if text[0] == QUOTE:
        return QUOTE + text
    lead = text.lstrip(" ")
    if lead[:1] in TRIGGERS and not _NUMBER.match(text):
        return QUOTE + text
    return text


def recover(text):
    """The text a cell written by :func:`neutral` was given: one leading single quote removed (anything that is
    not text, as pandas gives a number, is returned as it is)."""
    return text[1:] if isinstance(text, str) and text[:1] == QUOTE else text
