"""leaderboard and recommend on one process or several: the same bytes out, and --jobs said wrong in one line.

Each transcript (or seed) is a unit the pool measures on its own (prunesim.studies.pool); the units come
back in the order they were read, so that every table, file and line is what one process gives.
"""

from __future__ import annotations

import errno
import os
import shutil
import warnings
from pathlib import Path

import pytest
from cli_capture import cli

FIXTURES = Path(__file__).parent / "fixtures"
SMALL = ("--set", "turns=60", "--set", "budget=24000", "--set", "trigger=20000")


def _folder(tmp_path: Path) -> Path:
    """A few transcripts of several formats, one of them twice (a copy counts once, said in a warning)."""
    folder = tmp_path / "transcripts"
    folder.mkdir()
    for name in ("mini.traj.json", "tiny.traj", "openai.json", "openhands.jsonl"):
        shutil.copy(FIXTURES / name, folder / name)
    shutil.copy(FIXTURES / "mini.traj.json", folder / "mini-copy.traj.json")
    shutil.copytree(FIXTURES / "claude-code", folder / "claude-code")
    return folder


def _outputs(tmp_path: Path, name: str, *argv) -> tuple[int, str, str, dict[str, bytes]]:
    out = tmp_path / name
    with warnings.catch_warnings():  # a fresh registry: each command shows its warnings as a new process would
        warnings.simplefilter("default")
        code, stdout, err = cli(*argv, "--out", out)
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir())} if out.is_dir() else {}
    files.pop("reproduce.json", None)  # the command line as typed, --jobs with it
    return code, stdout.replace(str(out), "OUT"), err, files


@pytest.mark.parametrize("command", [("leaderboard",), ("recommend", "--draws", "60", "--policies",
                                                        "naive,recency,observation-masking:swe-agent")])
def test_transcripts_on_two_processes_give_the_bytes_of_one(tmp_path, command):
    folder = _folder(tmp_path)
    one = _outputs(tmp_path, "one", *command, folder, "--jobs", "1")
    two = _outputs(tmp_path, "two", *command, folder, "--jobs", "2")
    assert one[0] == 0, one[2]
    assert one[3], "nothing written"
    assert "same run as" in one[2]  # the copy was met, and said once
    assert two == one


@pytest.mark.parametrize("command", [("leaderboard",), ("recommend", "--draws", "60", "--policies", "naive,recency")])
def test_seeds_on_three_processes_give_the_bytes_of_one(tmp_path, command):
    argv = (*command, "--scenario", "oscillation-40", "--seeds", "0:5", *SMALL)
    one = _outputs(tmp_path, "one", *argv, "--jobs", "1")
    three = _outputs(tmp_path, "three", *argv, "--jobs", "3")
    assert one[0] == 0, one[2]
    assert three == one


def test_a_file_that_fails_is_said_in_its_turn_whatever_the_jobs(tmp_path):
    folder = _folder(tmp_path)
    (folder / "broken.json").write_text("{ not json")
    one = _outputs(tmp_path, "one", "leaderboard", folder, "--skip-bad", "--jobs", "1")
    two = _outputs(tmp_path, "two", "leaderboard", folder, "--skip-bad", "--jobs", "2")
    assert one[0] == 0 and "broken.json" in one[2], one[2]
    assert two == one


def test_jobs_below_one_is_refused(tmp_path):
    code, out, err = cli("recommend", "--scenario", "oscillation-40", "--seeds", "0:2", "--jobs", "0")
    assert code == 2 and out == ""
    assert err.strip() == "prunesim: error: --jobs: 0: must be at least 1"


@pytest.mark.parametrize("code", [errno.EAGAIN, errno.ENOMEM])
def test_a_worker_the_system_refuses_is_one_line_naming_jobs(tmp_path, monkeypatch, code):
    def fork():
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "fork", fork)
    status, out, err = cli("recommend", "--scenario", "oscillation-40", "--seeds", "0:4", *SMALL, "--policies",
                           "naive", "--draws", "20", "--jobs", "2", "--out", tmp_path / "rec")
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith("prunesim: error: --jobs: 2: the system refused to start worker 1 of 2: ")
    assert not (tmp_path / "rec").exists()  # nothing half-written


def _replay_dir(tmp_path: Path, name: str, *argv) -> tuple[int, str, str, bytes]:
    out = tmp_path / f"{name}.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        code, stdout, err = cli("replay-dir", *argv, "--out", out)
    return code, stdout, err, out.read_bytes() if out.exists() else b""


@pytest.mark.parametrize("extra", [(), ("--grid", "budget=30000,60000")])
def test_replay_dir_on_two_processes_gives_the_rows_of_one(tmp_path, extra):
    folder = _folder(tmp_path)
    (folder / "broken.json").write_text("{ not json")
    argv = (folder, "--policies", "noop,naive,recency", "--skip-bad", *extra)
    one = _replay_dir(tmp_path, "one", *argv, "--jobs", "1")
    two = _replay_dir(tmp_path, "two", *argv, "--jobs", "2")
    assert one[0] == 0 and one[3].count(b"\n") > 10, one[2]
    assert "broken.json" in one[2] and "same run as" in one[2] and "never acted" in one[2]
    assert two == one


FAULTY = '''
import sys
from prunesim.policies import Policy


class Faulty(Policy):
    name = "faulty"
    summary = "raises on its fourth turn"

    def decide(self, view):
        if view.turn == 4:
            {statement}
        return []
'''


@pytest.mark.parametrize("statement", ["raise ValueError('boom')", "sys.exit(0)"])
@pytest.mark.parametrize("command", ["leaderboard", "replay-dir"])
def test_a_users_policy_that_raises_in_a_worker_is_worded_as_in_one_process(tmp_path, monkeypatch, statement,
                                                                             command):
    (tmp_path / "mine.py").write_text(FAULTY.format(statement=statement))
    monkeypatch.chdir(tmp_path)
    folder = _folder(tmp_path)
    said = []
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}"
        argv = [command, folder, "--policies", "noop,mine.py:Faulty", "--jobs", jobs, "--out",
                out.with_suffix(".csv") if command == "replay-dir" else out]
        said.append(cli(*argv))
    assert said[0][0] == 2 and "the policy raised" in said[0][2], said[0]
    assert said[1] == said[0]
