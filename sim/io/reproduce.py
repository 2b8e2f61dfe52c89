"""What reproduces a result: ``reproduce.json`` in every result folder.

A run folder (``run --out``, ``api.write``), a sweep folder, a leaderboard
folder and a replay's ``replay.json`` record

* ``command``: the command exactly as typed (``["prunesim", "run", ...]``);
  null when the result was written from Python (``prunesim.api``);
* ``prunesim_version``;
* ``inputs``: every file the command read (scenario files and their
  ``extends`` chain, transcripts and workload files, a user's policy files,
  calibration and targets files), each with the SHA-256 of its bytes. A file
  shipped with prunesim is named ``prunesim:scenarios/NAME.toml``; any other
  by the path it was read under. A ``path.py:Class`` policy's file is hashed
  with the modules its import brought in from its own folder or one below it
  (named by their path beside it); what it imports from anywhere else (an
  installed package) is not;
* ``seeds``: the seed of each run (a sweep's and a leaderboard's seeds; one
  seed for a run).

``prunesim report`` shows the command and the inputs; a sweep run again in
its folder (to resume it) refuses, in one line, when an input it records has
changed since (:func:`changed`), so that no sweep mixes rows of two versions of
a policy or a scenario. The record holds no time or machine name: the same
command on the same inputs writes the same bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from contextvars import ContextVar
from importlib import resources
from pathlib import Path

from prunesim import __version__
from prunesim.errors import UserError
from prunesim.io import inputs

FILE = "reproduce.json"
FORMAT = 1
SHIPPED = "prunesim:"  # how a file shipped with prunesim is named: the same on every machine
_PACKAGES = ("prunesim.scenarios", "prunesim")

_command: ContextVar[list[str] | None] = ContextVar("prunesim_command", default=None)


@contextlib.contextmanager
def command(argv: list[str]) -> Iterator[None]:
    """The command line running until the block ends (set by the command line, read by :func:`record`)."""
    token = _command.set([inputs.text_name(str(a)) for a in argv])  # a name not UTF-8 as \xff escapes: JSON text
    try:
        yield
    finally:
        _command.reset(token)


def _shipped_roots() -> list[tuple[Path, str]]:
    roots = []
    for package in _PACKAGES:
        try:
            root = Path(str(resources.files(package))).resolve()
        except (ModuleNotFoundError, TypeError):
            continue
        roots.append((root, "scenarios/" if package.endswith("scenarios") else ""))
    return roots


def name_of(path: str) -> str:
    """How the record names an input: ``prunesim:REL`` for a file shipped with prunesim, else the path as read
    (bytes that are not UTF-8, legal in a Linux name, as ``\\xff`` escapes: the record is JSON text)."""
    try:
        real = Path(os.path.realpath(path))
    except (OSError, ValueError):
        return inputs.text_name(path)
    for root, prefix in _shipped_roots():
        if real.is_relative_to(root):
            return SHIPPED + prefix + real.relative_to(root).as_posix()
    return inputs.text_name(path)


def path_of(name: str) -> str:
    """Where the input a record names is on this machine: a shipped file in this prunesim, else the path (a name
    recorded with ``\\xff`` escapes is looked up as written, and so not found)."""
    if name.startswith(SHIPPED + "scenarios/"):
        return str(Path(str(resources.files("prunesim.scenarios"))) / name[len(SHIPPED + "scenarios/"):])
    if name.startswith(SHIPPED):
        return str(Path(str(resources.files("prunesim"))) / name[len(SHIPPED):])
    return name


def now(name: str, digest: str) -> str:
    """Whether the input a record names holds the same bytes here and now: ``same``, ``changed`` or ``not found``."""
    found = sha256(path_of(name))
    return "not found" if found is None else "same" if found == digest else "changed"


def sha256(path: str) -> str | None:
    """The SHA-256 of a file's bytes, or None when it cannot be read now (gone, or no longer readable)."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except (OSError, ValueError):
        return None
    return h.hexdigest()


def hashes() -> dict[str, str]:
    """Every file the running command has read, by :func:`name_of`, with its SHA-256 (sorted by name)."""
    from prunesim.policies import companion_files

    out = {}
    for path in inputs.read_paths():
        for one in (path, *_beside(path, companion_files(path))):
            digest = sha256(one)
            if digest is not None:
                out[name_of(one)] = digest
    return dict(sorted(out.items()))


def _beside(path: str, companions: tuple[str, ...]) -> list[str]:
    """A policy file's companions (resolved) named as the user named the file: ``pol/helper.py`` beside
    ``pol/policy.py``."""
    folder = Path(os.path.realpath(path)).parent
    return [os.path.join(os.path.dirname(path), os.path.relpath(c, folder)) for c in companions]


def record(seeds: list[int] | tuple[int, ...] | None) -> dict:
    """What reproduces a result of the running command (see the module docstring)."""
    argv = _command.get()
    return {
        "format": FORMAT,
        "command": list(argv) if argv is not None else None,
        "prunesim_version": __version__,
        "inputs": hashes(),
        "seeds": None if seeds is None else [int(s) for s in seeds],
    }


def read(folder: Path) -> dict | None:
    """A result folder's record, or None when it has none (written before prunesim kept one) or it is not one."""
    from prunesim.io import sweep_files

    path = Path(folder) / FILE
    if not path.is_file():
        return None
    data = sweep_files.parse_json(inputs.read_bytes(path, FILE, own=True), path)
    return data if valid(data) else None


def valid(data) -> bool:
    """Whether ``data`` is a record prunesim wrote (its fields of the types they are written with)."""
    if not isinstance(data, dict):
        return False
    argv, found, seeds = data.get("command"), data.get("inputs"), data.get("seeds")
    return ((argv is None or isinstance(argv, list) and all(isinstance(a, str) for a in argv))
            and isinstance(data.get("prunesim_version"), str)
            and isinstance(found, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in found.items())
            and (seeds is None or isinstance(seeds, list) and all(type(s) is int for s in seeds)))


def changed(recorded: dict, where: str) -> None:
    """Refuse, in one line naming the file, when an input ``recorded`` holds differs from what this command read.

    The version first; then each input read now under a recorded name whose bytes differ; then a recorded
    input this command did not read at all, nor any file with its bytes (the set of inputs changed).
    """
    was = recorded.get("prunesim_version")
    if was != __version__:
        raise UserError(where, "prunesim_version", f"written by prunesim {was}, this is {__version__}: the runs "
                        "left would come from other code than the runs done; use a new --out directory")
    now = hashes()
    then = recorded.get("inputs") or {}
    for name, digest in then.items():
        if name in now and now[name] != digest:
            raise UserError(where, "inputs", f"{name} changed since these runs were made (SHA-256 {digest[:12]} "
                            f"then, {now[name][:12]} now): resuming would mix results of both versions; restore "
                            "it or use a new --out directory")
    contents = set(now.values())
    for name, digest in then.items():
        if name not in now and digest not in contents:
            raise UserError(where, "inputs", f"{name} (SHA-256 {digest[:12]}) was an input of these runs and is "
                            "not one of this command's: resuming would mix results of other inputs; use a new "
                            "--out directory")
