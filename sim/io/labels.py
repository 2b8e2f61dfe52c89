"""Short, distinct names for policies in figures and tables.

A user's policy is named by its file, ``path/to/file.py:ClassName``; written
whole, that path squeezes a plot or a table column. Shown, it is shortened to
``ClassName``; to ``file.py:ClassName`` where two shown names would otherwise
read the same (two files defining one class name, or a class named like a
registered policy); and kept whole only when even that is ambiguous. Every
other name (a registered policy, a preset ``family:preset``) is shown as given.

A table column of a fixed width shows other names (transcripts, units) through
:func:`fitted_names`: a name too long for the column keeps its head and its
tail around ``...``, since names of one folder often share a long head (a
runtime's session files all start with the project's path) and differ only at
the end.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePath

from prunesim.policies import is_file_spec


def _forms(name: str) -> list[str]:
    """The ways ``name`` may be shown, shortest first."""
    if not is_file_spec(name):
        return [name]
    path, _, cls = name.rpartition(":")
    return [cls, f"{PurePath(path).name}:{cls}", name]


def policy_labels(names: Iterable[str]) -> dict[str, str]:
    """{name: label} for every distinct name, each label as short as keeps the labels distinct."""
    names = list(dict.fromkeys(str(n) for n in names))
    level = dict.fromkeys(names, 0)
    while True:
        shown = {n: _forms(n)[min(level[n], len(_forms(n)) - 1)] for n in names}
        clashes = {n for n in names for m in names if m != n and shown[m] == shown[n]}
        movable = {n for n in clashes if level[n] < len(_forms(n)) - 1}
        if not movable:
            return shown
        for n in movable:
            level[n] += 1


def policy_label(name: str) -> str:
    """One policy's label on its own (``ClassName`` for a file's policy)."""
    return policy_labels([name])[name]


def _elided(name: str, width: int) -> str:
    """``name`` in ``width`` characters: its head, ``...``, and the longer tail where names differ."""
    if len(name) <= width:
        return name
    head = (width - 3) // 4
    return f"{name[:head]}...{name[len(name) - (width - 3 - head):]}"


def fitted_names(names: Iterable[str], width: int) -> dict[str, str]:
    """{name: shown} with every shown name at most ``width`` long and the shown names distinct.

    A name that fits is shown whole; a longer one is elided in its middle, and
    kept whole (wider than the column) where eliding would make it read like
    another name.
    """
    names = list(dict.fromkeys(str(n) for n in names))
    shown = {n: _elided(n, width) for n in names}
    counts: dict[str, int] = {}
    for label in shown.values():
        counts[label] = counts.get(label, 0) + 1
    return {n: (label if counts[label] == 1 else n) for n, label in shown.items()}
