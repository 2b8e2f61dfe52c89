"""Input files: only a regular file is read.

A device never ends (``/dev/zero`` fills the memory) and a named pipe may never
start (no writer: the read waits forever), so an input path that names either
is refused in one line before anything is read, with what it really is.
"""

from __future__ import annotations

import os
import stat

_SPECIAL = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
            (stat.S_ISFIFO, "a named pipe: save what it carries to a file first"), (stat.S_ISSOCK, "a socket"))


def special_kind(path: str | os.PathLike) -> str | None:
    """What ``path`` (its links followed) is when it is neither a regular file nor a folder; else None."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, a loop of links, a NUL in the name: the reader says so
        return None
    for test, kind in _SPECIAL:
        if test(mode):
            return kind
    return None


def problem(path: str | os.PathLike, what: str) -> str | None:
    """Why ``path`` cannot be read as ``what`` ("scenario file"), or None when it can."""
    try:
        mode = os.stat(path).st_mode  # follows links
    except (FileNotFoundError, NotADirectoryError):
        return f"no such {what}" + (" (a broken symbolic link)" if os.path.islink(path) else "")
    except OSError as err:  # a loop of links, a folder on the way we may not search, a name too long
        return f"cannot read: {err.strerror or err}"
    if stat.S_ISDIR(mode):
        return f"is a directory, not a {what}"
    kind = special_kind(path)
    if kind:
        return f"not a regular file ({kind})"
    try:
        with open(path, "rb"):
            pass
    except OSError as err:
        return f"cannot read: {err.strerror or err}"
    return None
