"""The command line's one error boundary: exit codes 0, 1, 2, 70, 130, one line each, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from prunesim.cli import EXIT_BUG, EXIT_ENVIRONMENT, EXIT_INTERRUPTED, EXIT_USAGE, main
from prunesim.cli.commands import list as list_cmd
from prunesim.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
HAS_DEV_FULL = Path("/dev/full").exists()


def _failing(exc: BaseException):
    def func(args):
        raise exc

    return func


def test_a_bug_is_one_line_naming_the_crash_report_and_exit_70(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("PRUNESIM_CRASH_DIR", str(tmp_path / "crashes"))
    monkeypatch.setattr(list_cmd, "main", _failing(ZeroDivisionError("division by zero")))
    assert main(["list"]) == EXIT_BUG == 70
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "internal error" in err and "ZeroDivisionError" in err and "bug in prunesim, not in your input" in err
    (report,) = (tmp_path / "crashes").iterdir()
    assert str(report) in err
    text = report.read_text()
    assert "Traceback (most recent call last)" in text and "ZeroDivisionError: division by zero" in text
    assert "command: prunesim list" in text


def test_a_bug_is_never_called_bad_input(monkeypatch, capsys):
    """A ValueError from inside prunesim is a bug (exit 70), not a user error (exit 2)."""
    monkeypatch.setattr(list_cmd, "main", _failing(ValueError("p <= 0, p > 1 or p contains NaNs")))
    assert main(["list"]) == EXIT_BUG
    assert "error:" not in capsys.readouterr().err.split("internal error")[0]


def test_the_crash_report_falls_back_when_its_folder_cannot_be_written(monkeypatch, capsys, tmp_path):
    (tmp_path / "afile").write_text("")
    monkeypatch.setenv("PRUNESIM_CRASH_DIR", str(tmp_path / "afile" / "crashes"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(list_cmd, "main", _failing(KeyError("x")))
    assert main(["list"]) == EXIT_BUG
    err = capsys.readouterr().err
    assert str(tmp_path / "state" / "prunesim" / "crashes") in err


def test_interrupt_is_130_and_one_line(monkeypatch, capsys):
    monkeypatch.setattr(list_cmd, "main", _failing(KeyboardInterrupt()))
    assert main(["list"]) == EXIT_INTERRUPTED == 130
    assert capsys.readouterr().err == "prunesim: interrupted\n"


def test_user_errors_are_2_and_an_unnamed_os_error_is_one_line(monkeypatch, capsys):
    monkeypatch.setattr(list_cmd, "main", _failing(UserError("x.toml", "turns", "must be positive")))
    assert main(["list"]) == EXIT_USAGE
    assert capsys.readouterr().err == "prunesim: error: x.toml: turns: must be positive\n"
    monkeypatch.setattr(list_cmd, "main", _failing(PermissionError(13, "Permission denied", "/etc/x")))
    assert main(["list"]) == EXIT_USAGE
    assert capsys.readouterr().err == "prunesim: error: /etc/x: Permission denied\n"
    monkeypatch.setattr(list_cmd, "main", _failing(OSError(5, "Input/output error", "/mnt/disk")))
    assert main(["list"]) == EXIT_ENVIRONMENT
    assert capsys.readouterr().err == "prunesim: error: /mnt/disk: Input/output error\n"
    monkeypatch.setattr(list_cmd, "main", _failing(MemoryError()))
    assert main(["list"]) == EXIT_ENVIRONMENT


@pytest.mark.skipif(not HAS_DEV_FULL, reason="needs /dev/full (Linux): a disk that is always full")
@pytest.mark.parametrize("argv", [["list"], ["metrics"], ["metrics", "--markdown"],
                                  ["run", "oscillation-40", "--json"], ["compare", "oscillation-40", "--seeds", "0:2"]])
def test_stdout_on_a_full_disk_is_exit_1_and_one_line(argv):
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "sim", *argv], cwd=ROOT, stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr == "prunesim: error: standard output: No space left on device\n"


def test_stdout_closed_by_its_reader_ends_quietly():
    proc = subprocess.Popen([sys.executable, "-m", "sim", "metrics"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.read(10)
    proc.stdout.close()
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == b""


def test_a_real_crash_from_a_real_process_is_one_line(tmp_path):
    """End to end: a command that breaks inside prunesim (a patched module) prints one line, exits 70."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import prunesim.cli.commands.list as m\n"
        "def main(args):\n    raise AssertionError('an invariant broke')\n"
        "m.main = main\n"
    )
    env = {**os.environ, "PYTHONPATH": str(shim), "PRUNESIM_CRASH_DIR": str(tmp_path / "crashes")}
    proc = subprocess.run([sys.executable, "-m", "sim", "list"], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 70, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    (report,) = (tmp_path / "crashes").iterdir()
    assert "AssertionError: an invariant broke" in report.read_text()


def test_an_out_pipe_closed_by_its_reader_ends_quietly(tmp_path):
    """``--out /dev/stdout | head -c 4``: the output layer writes the pipe directly, and a closed pipe is no error."""
    run = tmp_path / "run"
    assert main(["run", "oscillation-40", "--out", str(run)]) == 0  # its ledger figure outgrows a pipe buffer
    proc = subprocess.Popen([sys.executable, "-m", "sim", "plot", "ledger", str(run), "--out", "/dev/stdout"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.read(4) == b"\x89PNG"
    proc.stdout.close()
    assert proc.wait(timeout=120) == 0
    assert b"error" not in proc.stderr.read()


def test_a_bug_met_on_a_name_that_is_not_utf8_still_saves_its_report(monkeypatch, capsys, tmp_path):
    """A Linux file name may hold any bytes: the crash report keeps them, and the line names the report."""
    monkeypatch.setenv("PRUNESIM_CRASH_DIR", str(tmp_path / "crashes"))
    monkeypatch.setattr(list_cmd, "main", _failing(ZeroDivisionError("division by zero")))
    monkeypatch.setattr(sys, "argv", ["prunesim", "list", os.fsdecode(b"x\xff.toml")])
    assert main(None) == EXIT_USAGE  # list takes no file: argparse's own error, naming it as typed
    assert capsys.readouterr().err == "prunesim: error: prunesim: unrecognized arguments: x\\xff.toml\n"
    monkeypatch.setattr(sys, "argv", ["prunesim", "list"])
    assert main(["list"]) == EXIT_BUG
    assert capsys.readouterr().err.count("\n") == 1
    from prunesim.cli import crash

    path = crash.save(ZeroDivisionError("x"), ["prunesim", "run", os.fsdecode(b"x\xff.toml")])
    assert b"x\xff.toml" in path.read_bytes()  # the report keeps the name's bytes
