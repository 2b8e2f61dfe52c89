"""A signal while a run's files move into place: the folder ends whole (old or new), never a mixture."""

import os
import signal
from pathlib import Path

import pytest
from prunesim.io import output
from prunesim.io.stream import stream_run


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


class Stopped(Exception):
    pass


def _stop(signum, frame):
    raise Stopped()


def stopped_by_sigterm(run) -> None:
    """Run ``run`` with SIGTERM raising Stopped, and check that it was stopped."""
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        with pytest.raises(Stopped):
            run()
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_termination_while_files_replace_old_ones_waits_until_all_are_in_place(tmp_path, oscillation, monkeypatch):
    out, fresh = tmp_path / "run", tmp_path / "fresh"
    stream_run(oscillation, "naive", 0, out)
    (out / "notes.txt").write_text("mine\n")
    stream_run(oscillation, "naive", 1, fresh)
    real_replace = os.replace

    def replace_then_terminate(src, dst, *args, **kwargs):
        # The signal arrives while the new files replace the old ones: one is in place, the others not yet.
        if Path(dst) == out / "events.csv":
            os.kill(os.getpid(), signal.SIGTERM)
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(output.os, "replace", replace_then_terminate)
    stopped_by_sigterm(lambda: stream_run(oscillation, "naive", 1, out))
    after = files_of(out)
    assert after.pop("notes.txt") == b"mine\n"
    assert after == files_of(fresh)  # the whole new run, which was complete when the signal came
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh", "run"]  # no staging folder left


def test_a_termination_during_the_cleanup_of_an_interrupted_run_leaves_no_staging_folder(tmp_path, oscillation,
                                                                                         monkeypatch):
    out = tmp_path / "run"
    real_rmtree = output.shutil.rmtree
    calls = []

    def rmtree_after_a_second_signal(path, *args, **kwargs):
        calls.append(path)
        os.kill(os.getpid(), signal.SIGTERM)  # a second signal, as the first one's cleanup begins
        return real_rmtree(path, *args, **kwargs)

    def broken(*args, **kwargs):
        raise Stopped()

    monkeypatch.setattr(output.shutil, "rmtree", rmtree_after_a_second_signal)
    monkeypatch.setattr(output, "new_folder_mode", broken)  # the first interruption, just before the move
    stopped_by_sigterm(lambda: stream_run(oscillation, "naive", 1, out))
    assert calls and list(tmp_path.iterdir()) == []


def test_a_run_written_again_into_its_folder_keeps_its_new_edit_log(tmp_path, oscillation):
    # The edit log of an earlier run is removed as stale only when this run wrote none: this run's stays.
    out, fresh = tmp_path / "run", tmp_path / "fresh"
    stream_run(oscillation, "tombstoned", 0, out)
    stream_run(oscillation, "tombstoned", 1, out)
    stream_run(oscillation, "tombstoned", 1, fresh)
    assert "editlog.jsonl" in files_of(fresh)
    assert files_of(out) == files_of(fresh)
    stream_run(oscillation, "naive", 1, out)  # a run without an edit log: the old one goes
    assert "editlog.jsonl" not in files_of(out)


def test_an_interrupt_while_the_command_line_loads_ends_it_quietly(tmp_path):
    import subprocess
    import sys

    # SIGINT arrives in the middle of loading the command line (an import hook sends it): no traceback,
    # nothing written, the process ends as SIGINT means.
    hook = (
        "import importlib.abc, os, signal, sys\n"
        "class Interrupt(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name == 'prunesim.cli':\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        f"sys.argv = ['prunesim', 'run', 'oscillation-40', '--out', {str(tmp_path / 'out')!r}]\n"
        "import runpy\n"
        "runpy.run_module('prunesim', run_name='__main__')\n"
    )
    done = subprocess.run([sys.executable, "-c", hook], capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGINT and done.stderr == ""
    assert list(tmp_path.iterdir()) == []
