"""The errors a user sees: one line naming where, which key, and what is wrong.

Two kinds, told apart by the exit code (docs/cli.md, "Exit codes"):

* :class:`UserError`, exit 2: the input is wrong (a file, a flag, a value, a
  path the user named that cannot be written);
* :class:`ResourceError`, exit 1: the machine failed (disk full, an I/O error,
  out of memory); the same command may work elsewhere or later.

:func:`from_os_error` turns an ``OSError`` into one of them, naming the path.
"""

from __future__ import annotations

import errno
import os
import re


class OneLineError(Exception):
    """An error the command line prints as one line (``str(err)``) and ends with ``exit_code``."""

    exit_code = 1

    def __init__(self, where: str, key: str | None, problem: str):
        self.where = where
        self.key = key
        self.problem = problem
        shown = f"{visible(where)}: {visible(key)}: {problem}" if key else f"{visible(where)}: {problem}"
        self.line = shortened(" ".join(shown.split()))
        # The arguments that make it again: SimPy re-raises a process's exception as type(err)(*err.args), so
        # that one raised inside a run (a user's policy refusing a value) stays this one line.
        super().__init__(where, key, problem)

    def __str__(self) -> str:
        return self.line

    def __reduce__(self):  # so that it crosses process boundaries (sweep workers) intact
        return (type(self), (self.where, self.key, self.problem))


LONG_NUMBER = 24  # digits: a number longer than this is no figure a user reads, only its length
LONG_WORD = 240  # characters of one word (a path, a value): more is shown by its ends and its length
_NUMBER = re.compile(rf"\d{{{LONG_NUMBER + 1},}}")
_WORD = re.compile(rf"\S{{{LONG_WORD + 1},}}")


def shortened(line: str) -> str:
    """``line`` with each overlong value cut to its ends and its length, so that a value a user typed (400 digits,
    a megabyte of text) leaves the error one short line that still says which value it was."""
    line = _NUMBER.sub(lambda m: f"{m[0][:6]}...{m[0][-2:]} ({len(m[0]):,} digits)", line)
    return _WORD.sub(lambda m: f"{m[0][:80]}...{m[0][-40:]} ({len(m[0]):,} characters)", line)


def visible(name) -> str:
    """A path or key as typed, control characters (a newline in a file name) shown as escapes.

    Folding them into spaces would keep the line one line but name another file.
    """
    text = str(name)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    """A character a line cannot show: a byte of a name that is not UTF-8 as the byte (``\\xff``, how Python
    decoded it: a lone surrogate), anything else as Python writes it (``\\n``)."""
    if "\udc80" <= ch <= "\udcff":
        return f"\\x{ord(ch) - 0xDC00:02x}"
    return repr(ch)[1:-1]


class UserError(OneLineError):
    """Bad input from the user: a file, a flag or a value.

    The command line prints ``str(err)`` on one line and exits with code 2;
    no traceback, no output files.
    """

    exit_code = 2


class ResourceError(OneLineError):
    """The environment failed (disk full, I/O error, out of memory): one line, exit code 1.

    Not a UserError, so that a loop that skips bad input files stops on it.
    """

    exit_code = 1


# Errors that say something about the path the user gave; anything else is the machine's.
_USER_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ("EACCES", "EPERM", "EROFS", "ENOTDIR", "EISDIR", "ENOENT", "EEXIST", "ELOOP", "ENAMETOOLONG",
                 "EXDEV", "EINVAL", "ENXIO", "ENODEV", "ETXTBSY", "ENOTEMPTY", "EBADF")
    if hasattr(errno, name)
)


def from_os_error(err: OSError, path: str | os.PathLike | None = None) -> OneLineError:
    """One line for an ``OSError``: the path and the system's reason; a ResourceError when the machine failed."""
    where = str(path) if path is not None else (str(err.filename) if err.filename is not None else "prunesim")
    reason = err.strerror or str(err) or type(err).__name__
    if err.errno in _USER_ERRNOS:
        return UserError(where, None, reason)
    return ResourceError(where, None, reason)


class PolicyContractError(RuntimeError):
    """A policy broke the contract (for example, it named a span that is not in the window).

    ``policy`` is the offending policy's class, so that the command line can
    tell a user's policy at fault (bad input) from a built-in one (a bug). It
    lives here, below the engine that raises it and the policies that check
    themselves with it, so that neither imports the other to name it.
    """

    def __init__(self, message: str, policy: type | None = None):
        super().__init__(message)
        self.policy = policy
