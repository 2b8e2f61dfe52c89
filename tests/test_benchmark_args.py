"""Every script in benchmarks/ answers --help with its usage, and a wrong argument with one usage line, before it
runs anything: no IndexError from a missing argument, no traceback, no benchmark started by ``--help``.

The scripts run in this process (``runpy``, as ``__main__``) so that the heavy imports are paid once; argparse
ends each of them with SystemExit before a single run.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
SCRIPTS = sorted(p for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))


def _run(script: Path, argv: list[str], monkeypatch) -> int:
    monkeypatch.setattr(sys, "argv", [str(script), *argv])
    # as ``python benchmarks/x.py`` does: the script's folder first on the path (a script imports its neighbours)
    monkeypatch.setattr(sys, "path", [str(script.parent), *sys.path])
    with pytest.raises(SystemExit) as ended:
        runpy.run_path(str(script), run_name="__main__")
    return ended.value.code


def test_the_benchmarks_folder_is_found():
    assert len(SCRIPTS) >= 10, SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help_prints_the_usage_and_runs_nothing(script, monkeypatch, capsys):
    code = _run(script, ["--help"], monkeypatch)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("usage: ") and "Traceback" not in out + err


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
@pytest.mark.parametrize("argv", [["--no-such-option"], ["--no-such-option", "x", "y", "z"]], ids=["flag", "extra"])
def test_a_wrong_argument_is_the_usage_and_one_error_line(script, argv, monkeypatch, capsys):
    code = _run(script, argv, monkeypatch)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert lines[0].startswith("usage: ") and lines[-1].startswith(f"{script.name}: error: ")
    assert "Traceback" not in err


def test_check_identical_names_a_missing_snapshot_before_any_run(tmp_path, monkeypatch, capsys):
    script = BENCHMARKS / "check_identical.py"
    for argv, said in [([], "the following arguments are required: mode, path"),
                       (["check"], "the following arguments are required: path"),
                       (["compare", "x"], "invalid choice: 'compare'"),
                       (["check", str(tmp_path / "none.json")], "none.json: not a readable snapshot (FileNotFound"),
                       (["save", str(tmp_path / "no" / "where.json")], "where.json: no folder")]:
        assert _run(script, argv, monkeypatch) == 2
        err = capsys.readouterr().err
        assert said in err.strip().splitlines()[-1], (argv, err)
    (tmp_path / "list.json").write_text("[1, 2]")
    assert _run(script, ["check", str(tmp_path / "list.json")], monkeypatch) == 2
    assert "not a snapshot 'save' wrote" in capsys.readouterr().err
