"""Input files: the one way every command reads a file, and the record of what it read.

Only a regular file is read. A device never ends (``/dev/zero`` fills the
memory) and a named pipe may never start (no writer: the read waits forever),
so :func:`open_input` opens without waiting (``O_NONBLOCK``), looks at what it
opened and refuses anything but a regular file in one line naming it, before a
byte is read. Every reader of a user's file (scenarios and their ``extends``
chain, transcripts, workloads, calibrations, targets, result files) goes
through it.

While a command runs (:func:`watching`, entered by the command line), every
file opened here is noted, with the policy files a command named
(:func:`note_policy`). :mod:`prunesim.io.output` refuses to write onto any of
them: one rule, whatever path led to the file (a flag, an ``extends`` chain, a
link). Outside a command nothing is noted.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator
from contextvars import ContextVar
from typing import BinaryIO

from prunesim.errors import UserError, from_os_error
from prunesim.policies import is_file_spec

_SPECIAL = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
            (stat.S_ISFIFO, "a named pipe: save what it carries to a file first"), (stat.S_ISSOCK, "a socket"))

# (device, inode) -> the path as first read, for the command running in this context; None outside one.
_read: ContextVar[dict[tuple[int, int], str] | None] = ContextVar("prunesim_inputs_read", default=None)


@contextlib.contextmanager
def watching() -> Iterator[dict[tuple[int, int], str]]:
    """Note every file read until the block ends (one command)."""
    token = _read.set({})
    try:
        yield _read.get()
    finally:
        _read.reset(token)


def note(path: str | os.PathLike, st: os.stat_result | None = None) -> None:
    """Note ``path`` as read by the running command (nothing outside one, or when it cannot be looked at)."""
    seen = _read.get()
    if seen is None:
        return
    if st is None:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return
    if stat.S_ISREG(st.st_mode):
        seen.setdefault((st.st_dev, st.st_ino), os.fspath(path))


def read_paths() -> list[str]:
    """The files the running command has read, each once, as first read (in that order); [] outside a command.
    What :mod:`prunesim.io.reproduce` hashes."""
    return list((_read.get() or {}).values())


def release(path: str | os.PathLike) -> None:
    """Let an output replace ``path`` after all: a result the command regenerates in place (``calibrate
    --force`` onto the scenario it calibrates), never any other file it read."""
    seen = _read.get()
    if seen:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return
        seen.pop((st.st_dev, st.st_ino), None)


def note_policy(name) -> None:
    """Note the file of a ``path/to/file.py:ClassName`` policy (each name of a comma-separated list)."""
    if not isinstance(name, str):
        return
    for one in name.split(","):
        one = one.strip()
        if is_file_spec(one):
            note(one.rpartition(":")[0])


def read_as(path: str | os.PathLike) -> str | None:
    """The path under which the running command read the regular file ``path`` (links followed), or None."""
    seen = _read.get()
    if not seen:
        return None
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return seen.get((st.st_dev, st.st_ino)) if stat.S_ISREG(st.st_mode) else None


def text_name(name: str) -> str:
    """A file name as text a result may record: bytes that are not UTF-8 (legal in a Linux name) as ``\\xff``
    escapes, so that the scenario or transcript named after the file can be written, hashed and printed."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _kind(mode: int) -> str | None:
    for test, kind in _SPECIAL:
        if test(mode):
            return kind
    return None


def special_kind(path: str | os.PathLike) -> str | None:
    """What ``path`` (its links followed) is when it is neither a regular file nor a folder; else None."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, a loop of links, a NUL in the name: the reader says so
        return None
    return _kind(mode)


def open_input(path: str | os.PathLike, what: str = "file", where: str | None = None,
               own: bool = False) -> BinaryIO:
    """``path`` opened for reading in binary, when it is a regular file; else one line naming it.

    ``what`` names the file in the errors ("scenario file"); ``where`` is how
    they name it (the path as typed, by default). ``own``: the command's own
    output, read back to go on with it (a sweep's store on resuming), not an input.
    """
    where = os.fspath(path) if where is None else where
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a pipe without a writer: no wait
    except (FileNotFoundError, NotADirectoryError):
        broken = " (a broken symbolic link)" if _is_link(path) else ""
        raise UserError(where, None, f"no such {what}{broken}") from None
    except ValueError:  # a NUL in the name
        raise UserError(where, None, f"no such {what} (the name holds a NUL byte)") from None
    except OSError as err:  # no permission, a loop of links, a name too long
        raise UserError(where, None, f"cannot read: {err.strerror or err}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise UserError(where, None, f"is a directory, not a {what}")
        kind = _kind(st.st_mode)
        if kind:
            raise UserError(where, None, f"not a regular file ({kind})")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    if not own:
        note(path, st)
    return os.fdopen(fd, "rb")


def _is_link(path) -> bool:
    try:
        return os.path.islink(path)
    except (OSError, ValueError):
        return False


def read_bytes(path: str | os.PathLike, what: str = "file", where: str | None = None, own: bool = False) -> bytes:
    """The whole of a regular file (see :func:`open_input`); a read error is one line naming it."""
    shown = os.fspath(path) if where is None else where
    with open_input(path, what, shown, own) as fh:
        try:
            return fh.read()
        except OSError as err:  # an I/O error (the machine's: exit 1), a folder that vanished under a mount
            one = from_os_error(err, shown)
            raise type(one)(shown, None, f"cannot read: {one.problem}") from None


def read_text(path: str | os.PathLike, what: str = "file", where: str | None = None) -> str:
    """A regular file's UTF-8 text (a leading byte-order mark dropped); anything else is one line."""
    shown = os.fspath(path) if where is None else where
    try:
        return read_bytes(path, what, shown).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UserError(shown, None, "not a text file (invalid UTF-8)") from None


def problem(path: str | os.PathLike, what: str) -> str | None:
    """Why ``path`` cannot be read as ``what`` ("scenario file"), or None when it can."""
    try:
        open_input(path, what).close()
    except UserError as err:
        return err.problem
    return None


# -- malformed JSON, worded once ---------------------------------------------------------
# The decoder's messages end where Python would print the position ("Unterminated string starting at"):
# each as a whole sentence, the position said apart.
_JSON_SENTENCES = (
    ("Expecting value", "a value was expected here (a number, a string, true, false, null, [ or {)"),
    ("Expecting property name enclosed in double quotes", "a key in double quotes was expected here"),
    ("Expecting ':' delimiter", "a ':' was expected here, after the key"),
    ("Expecting ',' delimiter", "a ',' or a closing bracket was expected here"),
    ("Unterminated string starting at", "the string that starts here is never closed"),
    ("Invalid control character", "a raw control character (a newline, a tab) is inside this string"),
    ("Invalid \\uXXXX escape", "this \\u escape lacks its four hexadecimal digits"),
    ("Invalid \\escape", "this backslash escape is not one JSON knows"),
    ("Extra data", "more text follows the end of the JSON value here"),
    ("Illegal trailing comma", "a comma stands before a closing bracket here"),
)


def json_problem(err: BaseException, line: int | None = None) -> str:
    """What is wrong with JSON that ``json.loads`` refused, as one whole sentence with where it is.

    ``err`` is what the decoder raised: a ``JSONDecodeError``, a ``ValueError``
    (a number of thousands of digits) or a ``RecursionError`` (nested past the
    stack). ``line``: the text was that line of a JSON-lines file, which the
    error names beside the file (``PATH:LINE:``), so the sentence gives the column only.
    """
    if isinstance(err, RecursionError):
        return "JSON nested too deeply to read"
    if not isinstance(err, json.JSONDecodeError):
        if "digits" in str(err):  # Python's limit on converting long integers
            return "malformed JSON: a number too long to read (thousands of digits)"
        return "malformed JSON: " + " ".join(str(err).split())
    if not err.doc.strip():
        return "malformed JSON: the file is empty"
    end = len(err.doc.rstrip())
    ended = err.msg.startswith("Expecting") and err.pos >= end
    pos = min(err.pos, end)  # a text that ends early: where its last character is, not past its line end
    lineno, colno = err.doc.count("\n", 0, pos) + 1, pos - err.doc.rfind("\n", 0, pos)
    where = f"line {lineno}, column {colno}" if line is None else f"column {colno}"
    if ended:
        return f"malformed JSON at {where}: the text ends before the JSON value does (a truncated file?)"
    sentence = next((s for prefix, s in _JSON_SENTENCES if err.msg.startswith(prefix)),
                    err.msg.removesuffix(" at").strip())
    return f"malformed JSON at {where}: {sentence}"


def malformed_json(where: str | os.PathLike, err: BaseException, line: int | None = None) -> UserError:
    """The one error for a file (``PATH: ...``), or a line of a JSON-lines file (``PATH:LINE: ...``), that
    the JSON decoder refused; see :func:`json_problem`."""
    shown = os.fspath(where) if line is None else f"{os.fspath(where)}:{line}"
    return UserError(shown, None, json_problem(err, line))
