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


class OneLineError(Exception):
    """An error the command line prints as one line (``str(err)``) and ends with ``exit_code``."""

    exit_code = 1

    def __init__(self, where: str, key: str | None, problem: str):
        self.where = where
        self.key = key
        self.problem = problem
        shown = f"{visible(where)}: {visible(key)}: {problem}" if key else f"{visible(where)}: {problem}"
        super().__init__(" ".join(shown.split()))

    def __reduce__(self):  # so that it crosses process boundaries (sweep workers) intact
        return (type(self), (self.where, self.key, self.problem))


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
