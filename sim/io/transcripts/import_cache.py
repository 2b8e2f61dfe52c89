"""Imported transcripts kept between commands, found again by what they were imported from.

Importing a transcript (parsing, tokenizing, calibrating, assembling) is the
same work each time a command reads the same file the same way. The workloads
a file gave are kept in a cache folder under a key made of everything the
import depends on: the file's bytes (SHA-256) and name, the importer itself
(the bytes of every module and data file of :mod:`prunesim.io.transcripts`,
so that any change to it, released or not, misses), the tokenizer (and the
version of the package behind it), the calibration (a calibration file by its
bytes) and the sidechain setting. A file that changes, or an importer that
changes, is imported again.

The folder is ``$PRUNESIM_CACHE_DIR``, else ``$XDG_CACHE_HOME/prunesim``
(``~/.cache/prunesim``). ``PRUNESIM_NO_CACHE=1`` or a command's ``--no-cache``
turns it off. An entry is written whole or not at all (a temporary file renamed
into place) and carries a checksum of its contents and of its own name: an
entry that is cut, changed, unreadable or another file's (copied or linked over
this one) is ignored and the file imported again; only a regular file is read
as an entry (a link, a pipe or a device in its place is never followed). The cache never
changes a result: a hit gives the workloads the import would give, and a
cache that cannot be written is simply not written.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import stat
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

FORMAT = b"prunesim-import-cache 2\n"  # an entry's first line: what it is, and the layout of what follows
HELD_PARTS_MAX = 2_000_000  # a file of more parts than this is imported every time (its runs are not all held)

_enabled = True


def configure(enabled: bool) -> None:
    """Use the cache or not (a command's ``--no-cache``); ``PRUNESIM_NO_CACHE`` turns it off either way."""
    global _enabled
    _enabled = enabled


def folder() -> Path | None:
    """Where entries are kept, or None when the cache is off."""
    if not _enabled or os.environ.get("PRUNESIM_NO_CACHE", "") not in ("", "0"):
        return None
    if os.environ.get("PRUNESIM_CACHE_DIR"):
        return Path(os.environ["PRUNESIM_CACHE_DIR"]) / "imports"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "prunesim" / "imports"


@lru_cache(maxsize=1)
def importer_version() -> str:
    """A digest of the importer's own files: any change to how a transcript is imported changes it."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(here.iterdir()):
        if path.suffix in (".py", ".json", ".toml") and path.is_file():
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    from prunesim.io.transcripts import workload

    h.update(f"workload {workload.VERSION}; python {sys.version_info[:2]}".encode())
    return h.hexdigest()


@lru_cache(maxsize=8)
def _tokenizer_version(tokenizer: str) -> str:
    """The version of the package behind a BPE tokenizer (the shipped counters are the importer's own code)."""
    from prunesim.io.transcripts.tokens import BPE_ENCODINGS

    if tokenizer not in BPE_ENCODINGS:
        return ""
    try:
        from importlib.metadata import version

        return version("bpe-openai")
    except Exception:  # noqa: BLE001 - not installed: the shipped counters only
        return ""


def key(path: Path, content: bytes, tokenizer: str, calibration: str, sidechains: str) -> str:
    """The entry's name: a digest of the file and of every setting the import reads."""
    parts = [importer_version(), hashlib.sha256(content).hexdigest(), str(path), tokenizer,
             _tokenizer_version(tokenizer), calibration, sidechains]
    if calibration not in ("auto", "none"):  # a calibration file: by what it holds
        try:
            parts.append(hashlib.sha256(Path(calibration).read_bytes()).hexdigest())
        except OSError:
            return ""  # unreadable here: the import says so, and nothing is cached
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def frozen(run) -> bytes:
    """One imported run as it is now, before anything it is handed to adds to it."""
    return pickle.dumps(run, protocol=pickle.HIGHEST_PROTOCOL)


def load(name: str) -> list | None:
    """The workloads kept under ``name``, or None (a miss, or an entry that is cut, changed, unreadable or
    not the one written under ``name``)."""
    where = folder()
    if where is None or not name:
        return None
    blob = _read_regular(where / name)
    if blob is None:
        return None
    head, digest, body = blob[:len(FORMAT)], blob[len(FORMAT):len(FORMAT) + 32], blob[len(FORMAT) + 32:]
    if head != FORMAT or _checksum(name, body) != digest:
        return None
    try:
        return [pickle.loads(run) for run in pickle.loads(body)]
    except Exception:  # noqa: BLE001 - whatever a damaged entry raises: it is not used
        return None


def _checksum(name: str, body: bytes) -> bytes:
    """The entry's body bound to its name: a whole entry of another file, renamed or linked here, fails it."""
    return hashlib.sha256(name.encode("ascii") + b"\0" + body).digest()


def _read_regular(path: Path) -> bytes | None:
    """``path``'s bytes if it is a regular file, opened without following a link (a pipe would block the
    command, a device such as /dev/zero never ends); None otherwise or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            return f.read() if stat.S_ISREG(os.fstat(f.fileno()).st_mode) else None
    except OSError:
        return None


def store(name: str, runs: list[bytes]) -> None:
    """Keep ``runs`` (each :func:`frozen`) under ``name``: written whole and renamed into place, or not at all."""
    where = folder()
    if where is None or not name:
        return
    try:
        body = pickle.dumps(runs, protocol=pickle.HIGHEST_PROTOCOL)
        where.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=where)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(FORMAT + _checksum(name, body) + body)
            os.replace(tmp, where / name)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, pickle.PicklingError):  # a full disk, a read-only home: the next command imports again
        return
