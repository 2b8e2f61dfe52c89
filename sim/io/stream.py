"""A run written as it happens: trace, ledger, events and edit log streamed to staged files.

:class:`StagedFiles` opens each output under a temporary name beside its
target (``.NAME.XXXX.tmp``), with the mode a plain ``open`` would give under
the user's umask, and renames them all into place at the end. Until then the
targets are untouched; on an error, an interrupt (SIGINT) or a termination
(SIGTERM, which the command line turns into an exception) the temporary files
are removed and nothing a user had is replaced. The renames run with SIGINT and
SIGTERM held back, so an interrupt during them waits until they are done: a
folder holds the whole new run or its old files, never a mixture.

:func:`stream_run` runs one scenario with a
:class:`~prunesim.observe.recorder.StreamingRecorder` and an edit log that
writes each record to ``editlog.jsonl`` as it is appended, so memory does not
grow with the run.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from prunesim.errors import UserError, from_os_error
from prunesim.io import atomic, output, reproduce, settings
from prunesim.io.results import EDIT_LOG_FILE, run_record, run_settings, scenario_record
from prunesim.model.editlog import EditLog
from prunesim.observe.recorder import StreamingRecorder
from prunesim.runner import EDIT_LOG_TAIL, RunResult, run_one

BUFFER = 1 << 20  # bytes buffered per open file


def _file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask  # what open() gives; mkstemp alone makes files 0600


class StagedFiles:
    """Files written under temporary names in ``folder`` and renamed into place together by :meth:`commit`."""

    def __init__(self, folder: Path, flag: str = "--out", shown: Path | None = None):
        self.folder = Path(folder)
        self.flag = flag  # named in the one-line error when the folder cannot be written
        # The folder the user named: a staging folder's hidden name would mean nothing to them.
        self.shown = Path(shown) if shown is not None else self.folder
        self._open: dict[str, tuple[str, object]] = {}  # target name -> (temporary path, file)
        self._mode = _file_mode()
        self._made: list[Path] = []  # folders this object created (removed again by abort if left empty)

    def open(self, name: str, mode: str = "w"):
        """A text file (``mode`` ``"w"`` or ``"w+"``) that becomes ``folder/name`` on commit."""
        try:
            if not self.folder.is_dir():
                missing = [p for p in (self.folder, *self.folder.parents) if not p.exists()]
                self.folder.mkdir(parents=True, exist_ok=True)
                self._made = missing
            fd, tmp = tempfile.mkstemp(prefix=output.staging_prefix(name), suffix=".tmp", dir=self.folder)
        except OSError as err:
            self.abort()
            raise self._error(err) from None
        try:
            os.fchmod(fd, self._mode)
            fh = os.fdopen(fd, mode, buffering=BUFFER, encoding="utf-8", newline="")
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        self._open[name] = (tmp, fh)
        return fh

    def _error(self, err: OSError):
        """One line naming the folder: exit 1 for a full disk or an I/O error, 2 for a folder that cannot be written."""
        return from_os_error(err, f"{self.flag}: {self.shown}")

    def write(self, name: str, text: str) -> None:
        """A whole small file, staged with the others."""
        self.open(name).write(text)

    def discard(self, name: str) -> None:
        """Drop a staged file: it will not be written (and an old one of that name is removed on commit)."""
        tmp, fh = self._open.pop(name)
        fh.close()
        os.unlink(tmp)

    def commit(self, remove: tuple[str, ...] = ()) -> list[Path]:
        """Flush every file to disk, then rename each into place and remove the ``remove`` names."""
        try:
            for _tmp, fh in self._open.values():
                fh.flush()
                os.fsync(fh.fileno())
                fh.close()
        except OSError as err:  # a full disk, most likely: nothing is renamed
            self.abort()
            raise self._error(err) from None
        held = output.HeldSignals()
        try:
            blocked = [name for name in self._open if (self.folder / name).is_dir()]
            if blocked:
                self.abort()
                raise UserError(self.flag, str(self.folder / blocked[0]), "is a directory; nothing was written")
            written = []
            for name, (tmp, _) in list(self._open.items()):
                os.replace(tmp, self.folder / name)
                del self._open[name]
                written.append(self.folder / name)
            self._made = []
            for name in remove:
                path = self.folder / name
                if path.exists() and not path.is_dir():
                    path.unlink()
        finally:
            held.release()
        return written

    def abort(self) -> None:
        """Close and remove every staged file; the targets are left as they were."""
        for tmp, fh in self._open.values():
            try:
                fh.close()
            except OSError:
                pass
            if os.path.exists(tmp):
                os.unlink(tmp)
        self._open.clear()
        for folder in self._made:  # empty after a commit
            try:
                folder.rmdir()  # only if empty
            except OSError:
                break
        self._made = []

    def __enter__(self) -> StagedFiles:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.abort()  # after a commit there is nothing left to remove


def stream_run(scenario, policy: str | None, seed: int | None, out_dir: Path, trace: str = "all",
               workload=None, run=None, record: bool = False) -> tuple[RunResult, list[Path]]:
    """Run and write ``out_dir``'s files as the run goes; the same files as ``write_run`` after a recorded run.

    With ``trace="none"`` trace.csv holds its header only; the ledger, events and calls are written whatever
    the trace. ``run``: called as ``run(recorder, edit_log)`` in place of ``run_one`` (a transcript's replay,
    which adds its own figures to the summary), for the same ``scenario`` and ``policy``. ``record``: write
    reproduce.json (:mod:`prunesim.io.reproduce`), as ``run --out`` does (the other files are what
    ``write_run`` writes). Returns the result (its recorder holds no rows) and the
    files written.
    """
    from prunesim.policies import get_policy

    name = policy or scenario.policy
    keeps_log = bool(getattr(get_policy(name), "keeps_edit_log", False))
    # The files are staged in a fresh folder, then moved into out_dir as any folder output is
    # (prunesim.io.output.folder: links written through, other files left alone, nothing on an error; an earlier
    # run's edit log or record, which this run does not write, removed).
    with output.folder(out_dir, "--out", stale=[EDIT_LOG_FILE, reproduce.FILE]) as staging:
        with StagedFiles(staging, shown=out_dir) as staged:
            recorder = StreamingRecorder(trace, staged.open("trace.csv"), staged.open("ledger.csv"),
                                         staged.open("events.csv"), staged.open("calls.csv"))
            log = EditLog(sink=staged.open(EDIT_LOG_FILE, "w+"), tail=EDIT_LOG_TAIL) if keeps_log else None
            if run is None:
                result = run_one(scenario, name, seed, trace=trace, workload=workload, recorder=recorder,
                                 edit_log=log)
            else:
                result = run(recorder, log)
            recorder.flush()
            staged.write("scenario.json", atomic.dumps_json(scenario_record(result)))
            staged.write("summary.json", atomic.dumps_json(run_record(result)))
            staged.write(settings.SETTINGS_FILE, atomic.dumps_json(run_settings(result).to_json()))
            if record:
                staged.write(reproduce.FILE, atomic.dumps_json(reproduce.record([result.seed])))
            remove = ()
            if log is None or len(log) == 0:  # only a log with records is written; an old one is not this run's
                if log is not None:
                    staged.discard(EDIT_LOG_FILE)
                remove = (EDIT_LOG_FILE,)
            written = staged.commit(remove)
    written = [Path(out_dir) / path.name for path in written]
    return result, written
