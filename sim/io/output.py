"""Every file prunesim writes goes through here.

What happens depends on what the output path names (docs/cli.md, "How outputs are written"):

* a regular file, or nothing yet: the new content is written to a temporary
  file beside it, flushed to disk and renamed into place, so a reader (or a
  crash) sees the old file or the whole new one. A new file gets the mode the
  umask allows (0644 under umask 022); a replaced file keeps its own mode;
* a symbolic link: written through. The file it points to is replaced as above
  and the link stays a link; a dangling link gets its target created;
* a device, a pipe or a socket (``/dev/null``, ``/dev/stdout``, a FIFO), or a
  link into ``/proc`` or ``/dev``: written to directly (appending, never
  truncating), never renamed over;
* a folder where a file is expected: refused.

Folder outputs (a run directory, a folder of workloads, a replay's figures) are
built in a hidden staging folder and moved into place only when complete
(:func:`folder`), so a failed command leaves no half-filled folder.

Every ``OSError`` becomes one line naming the path
(:func:`prunesim.errors.from_os_error`): exit code 2 when the path is the
problem (a read-only folder, a path under a file), 1 when the machine is (disk
full, I/O error).
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from prunesim.errors import OneLineError, UserError, from_os_error
from prunesim.io import inputs

_MAX_LINKS = 40  # like the kernel's limit on symbolic links followed in one lookup
_NAME_MAX = 255  # bytes in one file name on Linux and macOS file systems
_RANDOM_CHARS = 8  # what tempfile adds between prefix and suffix
_umask: int | None = None


def _current_umask() -> int:
    global _umask
    if _umask is None:  # read once: os.umask can only be read by setting it
        _umask = os.umask(0o022)
        os.umask(_umask)
    return _umask


def new_file_mode() -> int:
    """The mode ``open()`` would give a new file: 0666 less the umask (mkstemp alone gives 0600)."""
    return 0o666 & ~_current_umask()


def new_folder_mode() -> int:
    """The mode ``mkdir`` would give a new folder: 0777 less the umask (mkdtemp alone gives 0700)."""
    return 0o777 & ~_current_umask()


def path_arg(text: str, flag: str = "--out") -> Path:
    """An output path given on the command line; an empty one is refused (it would mean the current folder)."""
    if not str(text).strip():
        raise UserError(flag, repr(text), "empty path")
    return Path(text)


def staging_prefix(name: str) -> str:
    """``.NAME.`` for a hidden staging file beside ``NAME``, cut so that the whole staging name (and the
    random part and ``.tmp`` the temporary-file functions add) fits the 255 bytes a file name may take:
    a legal name close to the limit never fails on a name prunesim made up."""
    raw = os.fsencode(name)[:_NAME_MAX - len(".." ".tmp") - _RANDOM_CHARS]
    return f".{os.fsdecode(raw)}."


def fit_name(stem: str, suffix: str) -> str:
    """``stem + suffix`` as a file name of at most 255 bytes: a longer stem (a transcript named near the limit)
    is cut, and a digest of the whole of it added, so that two long names that share a start stay apart."""
    name = stem + suffix
    if len(os.fsencode(name)) <= _NAME_MAX:
        return name
    digest = hashlib.sha256(os.fsencode(stem)).hexdigest()[:10]
    room = _NAME_MAX - len(os.fsencode(suffix)) - len(digest) - 1
    cut = os.fsencode(stem)[:room].decode("utf-8", "ignore")  # whole characters only
    return f"{cut}~{digest}{suffix}"


def names_folder(text: str) -> bool:
    """True when the path as typed ends with a separator: the user means a folder."""
    return str(text).endswith(("/", os.sep))


# -- what a path names --------------------------------------------------------------
def _through_special_links(path: Path) -> bool:
    """True when following ``path``'s symbolic links passes through /proc or /dev (``/dev/stdout``, fd links)."""
    p = path
    for _ in range(_MAX_LINKS):
        if not p.is_symlink():
            return False
        target = Path(os.readlink(p))
        p = target if target.is_absolute() else p.parent / target
        if str(p).startswith(("/proc/", "/dev/")):
            return True
    return False


def _where(path: str | os.PathLike, flag: str | None) -> str:
    """How an error names an output: the flag that gave it, then the path as typed."""
    return f"{flag}: {path}" if flag else str(path)


def kind_of(path: str | os.PathLike, flag: str | None = None) -> str:
    """``"file"`` (a regular file or nothing yet), ``"stream"`` (device, pipe, socket, /proc link) or ``"folder"``."""
    path = Path(path)
    try:
        st = os.stat(path)  # follows symbolic links
    except (FileNotFoundError, NotADirectoryError):
        return "file"  # nothing there (or a dangling link): where it would go is checked when it is made
    except OSError as err:  # a loop of links, a name too long, a folder we may not search
        raise from_os_error(err, _where(path, flag)) from None
    if stat.S_ISDIR(st.st_mode):
        return "folder"
    if stat.S_ISREG(st.st_mode) and not _through_special_links(path):
        return "file"
    return "stream"


def _kernel_fs(path: str | os.PathLike) -> str | None:
    """``/proc`` or ``/sys`` when ``path`` (its links followed) lies in the kernel's file systems, else None.

    Their files look regular but hold no data of anyone's, and their folders take no new file: an output
    there fails with a system reason that names nothing ("No such file or directory")."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    return next((root for root in ("/proc", "/sys") if real == root or real.startswith(root + "/")), None)


def _refuse_unwritable_file(path: Path, where: str) -> None:
    """Refuse an existing regular file that an output cannot replace: a kernel file, or one made read-only."""
    try:
        exists = stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return  # nothing there yet: whether its folder takes a new file is checked apart
    root = _kernel_fs(path)
    if exists and root:
        raise UserError(where, None, f"not a regular file (a file of the kernel's {root} file system); "
                                     "give a file name elsewhere")
    if exists and not os.access(path, os.W_OK):  # replacing it by a rename would undo the user's chmod
        raise UserError(where, None, "permission denied: the file is read-only")


def _creation_error(err: OSError, folder: Path, where: str) -> OneLineError:
    """Why no file or folder can be made in ``folder``, in words that name it, not the bare system reason."""
    root = _kernel_fs(folder)
    if root:
        return UserError(where, None, f"{folder} is in the kernel's {root} file system, which takes no new file")
    if err.errno in (errno.EACCES, errno.EPERM):
        return UserError(where, None, f"permission denied: cannot create a file in {folder}")
    if err.errno == errno.EROFS:
        return UserError(where, None, f"{folder} is on a read-only file system")
    one = from_os_error(err, where)
    return type(one)(where, None, f"cannot create a file in {folder}: {one.problem}")


def _check_creatable(folder: Path, where: str) -> None:
    """Prove that ``folder`` (which exists) takes a new file now: one made and removed at once."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise _creation_error(err, folder, where) from None


def _check_can_make(folder: Path, where: str) -> None:
    """Prove that ``folder`` can be made, or exists and takes a new file: the nearest folder that exists does."""
    missing = _missing_parents(folder, where)
    _check_creatable(missing[-1].parent if missing else folder, where)


def _real_target(path: Path) -> Path:
    """The file a path writes to: the end of its chain of symbolic links (created when missing)."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _missing_parents(folder: Path, where: str) -> list[Path]:
    """The folders to create so that ``folder`` exists (deepest first); refuses a file or a broken link on the way."""
    missing = []
    p = folder
    while not p.exists():
        if p.is_symlink():  # a dangling link (or a loop of links) where a folder should be
            raise UserError(where, None, f"{p} is a broken symbolic link, not a folder")
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    if p.exists() and not p.is_dir():
        raise UserError(where, None, f"{p} is a file, not a folder")
    return missing


def _make_parents(folder: Path, where: str) -> list[Path]:
    """Create ``folder`` and its missing parents; returns those created (deepest last)."""
    missing = _missing_parents(folder, where)
    created = []
    try:
        for d in reversed(missing):
            d.mkdir()
            created.append(d)
    except OSError as err:
        _remove_dirs(created)
        raise from_os_error(err, where) from None
    return created


def _remove_dirs(dirs: Sequence[Path]) -> None:
    for d in reversed(dirs):
        try:
            d.rmdir()
        except OSError:
            pass


# -- single files -------------------------------------------------------------------
def write_bytes(path: str | os.PathLike, data: bytes, flag: str | None = None) -> None:
    """Write ``data`` to ``path`` by the rules in the module docstring; errors name ``flag`` when given."""
    with FileOutput(path, flag) as out:
        out.write(data)
        out.commit()


def write_text(path: str | os.PathLike, text: str, flag: str | None = None) -> None:
    write_bytes(path, text.encode("utf-8"), flag)


class FileOutput:
    """One output file written in pieces (rows of a CSV as they come).

    Nothing is visible at ``path`` until :meth:`commit`; leaving the ``with``
    block without it (an error, an interrupt, a run with nothing to show)
    discards what was written and leaves an existing file as it was. A device
    or pipe is written as the pieces come, since it cannot be replaced.
    """

    def __init__(self, path: str | os.PathLike, flag: str | None = None):
        self.shown = Path(path)
        self.flag = flag
        self.where = _where(self.shown, flag)
        self.kind = kind_of(self.shown, flag)
        if self.kind == "folder":
            raise UserError(self.where, None, "is a folder; give a file name")
        if self.kind == "file":
            refuse_input(self.shown, self.where)
            _refuse_unwritable_file(self.shown, self.where)
        self.target = _real_target(self.shown)
        self._fd: int | None = None
        self._tmp: str | None = None
        self._created: list[Path] = []
        self.committed = False

    def __enter__(self) -> FileOutput:
        try:
            if self.kind == "stream":
                self._fd = os.open(self.shown, os.O_WRONLY | os.O_APPEND)
            else:
                self._created = _make_parents(self.target.parent, self.where)
                try:
                    fd, self._tmp = tempfile.mkstemp(prefix=staging_prefix(self.target.name), suffix=".tmp",
                                                     dir=self.target.parent)
                except OSError as err:
                    raise _creation_error(err, self.target.parent, self.where) from None
                self._fd = fd
                os.fchmod(fd, self._mode())
        except OSError as err:
            self._cleanup()
            raise from_os_error(err, self.where) from None
        except BaseException:
            self._cleanup()
            raise
        return self

    def _mode(self) -> int:
        try:
            return stat.S_IMODE(os.stat(self.target).st_mode)  # a replaced file keeps its mode
        except OSError:
            return new_file_mode()

    def write(self, data: bytes | str) -> None:
        if isinstance(data, str):
            data = data.encode("utf-8")
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except BrokenPipeError:
            raise  # the reader of a pipe went away (| head): the command ends quietly, as on stdout
        except OSError as err:
            raise from_os_error(err, self.where) from None

    def commit(self) -> None:
        try:
            if self.kind == "file":
                os.fsync(self._fd)
                os.close(self._fd)
                self._fd = None
                refuse_input(self.shown, self.where)  # read while the output was being made
                os.replace(self._tmp, self.target)
                self._tmp = None
            else:
                os.close(self._fd)
                self._fd = None
        except OSError as err:
            raise from_os_error(err, self.where) from None
        self.committed = True

    def _cleanup(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None
        if self._tmp is not None:
            try:
                os.unlink(self._tmp)
            except OSError:
                pass
            self._tmp = None
        if not self.committed:
            _remove_dirs(self._created)

    def __exit__(self, *exc) -> None:
        self._cleanup()


# -- folders ------------------------------------------------------------------------
def check_file(path: str | os.PathLike, flag: str | None = None) -> None:
    """Refuse, before any work is done, a file output that cannot be written, in the words writing it would use.

    A folder, a path under a file or a broken link, or a place that takes no new
    file (read-only, no permission) is refused now rather than after minutes
    of simulating. Nothing is created: a trial file is made in the nearest folder
    that exists and removed at once.
    """
    shown = Path(path)
    where = _where(shown, flag)
    kind = kind_of(shown, flag)
    if kind == "folder":
        raise UserError(where, None, "is a folder; give a file name")
    if kind == "stream":
        return  # written to directly, when the output comes
    refuse_input(shown, where)
    _refuse_unwritable_file(shown, where)
    _check_can_make(_real_target(shown).parent, where)


def check_own_kind(path: str | os.PathLike, marker: bytes, what: str, flag: str | None = None) -> None:
    """Refuse to replace an existing regular file that is not prunesim's own ``what`` (it lacks ``marker``).

    An output named like a file the user has (a typo, a path completed to the wrong file) would otherwise
    replace it whole: a result is replaced by a newer one of its kind, never anything else.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return  # nothing there, or a device or pipe, written to and never replaced
        with open(path, "rb") as fh:  # not through inputs: this file is not read as one
            head = fh.read(_OWN_PEEK)
    except (OSError, ValueError):
        return  # the writer says what is wrong with the place
    if marker not in head:
        raise UserError(_where(path, flag), None, f"exists and is not {what}, so it is not replaced; give "
                                                  "another name or remove it")


_OWN_PEEK = 1 << 22  # a calibration names its version after its profiles: read far enough for it


def refuse_input(path: str | os.PathLike, where: str) -> None:
    """Refuse an output onto a file the running command has read (:mod:`prunesim.io.inputs`), through any link."""
    source = inputs.read_as(path)
    if source is not None:
        raise UserError(where, None, f"is an input of this command ({source}); give another file")


def check_not_input(path: str | os.PathLike, inputs: Sequence[str | os.PathLike], flag: str | None = None) -> None:
    """Refuse an output file that is one of the command's own inputs (through any link): it would replace it."""
    try:
        out = os.stat(path)
    except (OSError, ValueError):
        return  # nothing there yet
    if not stat.S_ISREG(out.st_mode):
        return  # a device or a pipe is written to, never replaced
    for source in inputs:
        try:
            st = os.stat(source)
        except (OSError, ValueError):
            continue
        if (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino):
            raise UserError(_where(path, flag), None, f"is an input of this command ({source}); give another file")


def check_outside(path: str | os.PathLike, sources: Sequence[str | os.PathLike], flag: str | None = None) -> None:
    """Refuse an output that is, or lies inside, a folder the command reads (through any link).

    What it writes would land among the inputs and be read as transcripts (and
    fail as such) the next time a command reads that folder.
    """
    try:
        out = Path(os.path.realpath(path))
    except (OSError, ValueError):
        return
    for source in sources:
        if not os.path.isdir(source):
            continue
        folder = Path(os.path.realpath(source))
        if out == folder or folder in out.parents:
            raise UserError(_where(path, flag), None, f"is inside the folder it reads ({source}); what it "
                                                      "writes would be read as input next time: write elsewhere")


def check_folder(path: str | os.PathLike, flag: str | None = None) -> None:
    """Refuse, before any work is done, a folder output that names a file, a device or a broken link."""
    shown = Path(path)
    where = _where(shown, flag)
    if kind_of(shown, flag) == "folder":
        _check_creatable(shown, where)  # the staging folder goes inside it
        return
    if shown.is_symlink() and not shown.exists():
        raise UserError(where, None, "is a broken symbolic link")
    if shown.exists():
        raise UserError(where, None, "exists and is not a folder")
    _check_can_make(shown.parent, where)


@contextmanager
def folder(path: str | os.PathLike, flag: str | None = None, stale: Sequence[str] = ()) -> Iterator[Path]:
    """A staging folder whose contents move into ``path`` when the block ends without an error.

    ``path`` is created when missing (with its parents). When it exists, each
    staged file replaces the file of the same name in it (written through a
    symbolic link or to a device like any output) and nothing else in it is
    touched, except the names in ``stale``: results of an earlier run that this
    one did not produce, removed. On an error nothing changes. SIGINT and
    SIGTERM wait (:class:`HeldSignals`) while the files move in and while the
    staging folder is removed, unless a file is written through a link or to a
    device, which may block.
    """
    shown = Path(path)
    check_folder(shown, flag)
    dest = Path(os.path.realpath(shown)) if shown.is_symlink() else shown
    new = not dest.exists()
    created = _make_parents(dest.parent, _where(shown, flag)) if new else []
    held = None
    try:
        staging = Path(tempfile.mkdtemp(prefix=staging_prefix(dest.name), suffix=".tmp",
                                        dir=dest.parent if new else dest))
    except OSError as err:
        _remove_dirs(created)
        raise _creation_error(err, dest.parent if new else dest, _where(shown, flag)) from None
    try:
        yield staging
        # From here on SIGINT and SIGTERM wait: the files move in together (an existing folder gets them one
        # by one), and a second signal cannot cut the cleanup short and leave the staging folder behind.
        held = None if not new and _writes_through(staging, dest) else HeldSignals()  # a pipe may wait for a reader
        if new:
            os.chmod(staging, new_folder_mode())
            os.rename(staging, dest)
        else:
            _check_merge(staging, dest, shown)
            produced = {entry.name for entry in staging.iterdir()}  # read first: the merge moves them out
            _merge(staging, dest, shown)
            for name in stale:
                if name not in produced and (dest / name).is_file():
                    (dest / name).unlink()
    except OSError as err:
        raise from_os_error(err, _where(shown, flag)) from None
    finally:
        held = HeldSignals() if held is None else held
        try:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
            if new and not dest.exists():
                _remove_dirs(created)
        finally:
            held.release()


class HeldSignals:
    """SIGINT and SIGTERM noted instead of acted on until :meth:`release`, which then raises the first one.

    Blocking them with ``pthread_sigmask`` is not enough: numpy's threads leave them unblocked, and Python
    runs its handler in the main thread whichever thread the kernel chose. So the handlers are replaced for
    the while. Outside the main thread (where handlers cannot be set) nothing is held.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self._caught: list[int] = []
        self._previous = {}
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self._previous[signum] = signal.signal(signum, self._note)

    def _note(self, signum, frame) -> None:
        self._caught.append(signum)

    def release(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}
        if self._caught:
            signal.raise_signal(self._caught[0])  # handled as it would have been, now that the work is whole

    def __enter__(self) -> HeldSignals:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _check_merge(src: Path, dest: Path, shown: Path) -> None:
    """Refuse before moving anything when a staged name would land on something of another kind."""
    for entry in src.iterdir():
        target = dest / entry.name
        if entry.is_dir():
            if target.exists() and not target.is_dir():
                raise UserError(str(shown / entry.name), None, "exists and is not a folder")
            if target.is_dir():
                _check_merge(entry, target, shown / entry.name)
        elif target.is_dir():
            raise UserError(str(shown / entry.name), None, "is a folder; cannot replace it with a file")
        else:
            refuse_input(target, str(shown / entry.name))


def _writes_through(src: Path, dest: Path) -> bool:
    """Whether :func:`_merge` would write a file through a link or to a device (which may block) in ``dest``."""
    for entry in src.iterdir():
        target = dest / entry.name
        if entry.is_dir():
            if target.is_dir() and _writes_through(entry, target):
                return True
        elif os.path.lexists(target) and (target.is_symlink() or kind_of(target) != "file"):
            return True
    return False


def _merge(src: Path, dest: Path, shown: Path) -> None:
    for entry in sorted(src.iterdir()):
        target = dest / entry.name
        if entry.is_dir():
            if target.exists():
                _merge(entry, target, shown / entry.name)
            else:
                os.rename(entry, target)
        elif kind_of(target) == "file" and not target.is_symlink():
            os.replace(entry, target)
        else:  # a link or a device in the way: write through it, as any output
            write_bytes(target, entry.read_bytes())
