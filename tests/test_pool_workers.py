"""The pool's workers: no more start than there are units, each leaves Ctrl-C to the command and dies with it,
and a --jobs of any size is a number of processes asked for, not a crash."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys

import pytest
from cli_capture import cli
from prunesim.studies import pool

SMALL = ("--set", "turns=60", "--set", "budget=24000", "--set", "trigger=20000")
linux = pytest.mark.skipif(not sys.platform.startswith("linux") or "fork" not in
                           multiprocessing.get_all_start_methods(), reason="fork and prctl are Linux's")


def _started(item):
    return item, os.getpid()


@linux
@pytest.mark.parametrize("units", [2, 3])
def test_no_more_workers_start_than_there_are_units(units):
    alive = []
    results = []
    for result in pool.ordered(_started, range(units), jobs=64):
        alive.append(len(multiprocessing.active_children()))
        results.append(result[0])
    assert results == list(range(units))
    assert max(alive) <= units


def test_one_unit_is_computed_here():
    assert [pid for _, pid in pool.ordered(_started, [0], jobs=8)] == [os.getpid()]


def _how_started(_item):
    death = ctypes.c_int(0)
    ctypes.CDLL(None, use_errno=True).prctl(2, ctypes.byref(death))  # PR_GET_PDEATHSIG
    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN, death.value, os.getpid()


@linux
def test_a_worker_leaves_ctrl_c_to_the_command_and_dies_with_it():
    said = list(pool.ordered(_how_started, range(4), jobs=2))
    assert all(pid != os.getpid() for *_, pid in said)  # measured in workers
    assert all(ignores_ctrl_c and death == signal.SIGKILL for ignores_ctrl_c, death, _ in said)
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN  # the command's own Ctrl-C is untouched


@pytest.mark.parametrize("jobs", ["64", str(10**40)])
def test_jobs_past_the_units_gives_the_bytes_of_one_process(tmp_path, jobs):
    argv = ("recommend", "--scenario", "oscillation-40", "--seeds", "0:3", *SMALL, "--policies", "naive",
            "--draws", "20")
    one = cli(*argv, "--jobs", "1", "--out", tmp_path / "one")
    many = cli(*argv, "--jobs", jobs, "--out", tmp_path / "many")
    assert one[0] == 0, one[2]
    assert many == (one[0], one[1].replace(str(tmp_path / "one"), str(tmp_path / "many")), one[2])
    assert (tmp_path / "many" / "recommend.json").read_bytes() == (tmp_path / "one" / "recommend.json").read_bytes()


ON_TURN_FOUR = '''
import os
from prunesim.errors import UserError
from prunesim.policies import Policy


class {cls}(Policy):
    name = "{name}"
    summary = "{what} on its fourth turn"

    def decide(self, view):
        if view.turn == 4:
            {statement}
        return []
'''


def on_turn_four(cls: str, what: str, statement: str) -> str:
    """A policy file whose policy ``cls`` runs ``statement`` on its fourth turn."""
    return ON_TURN_FOUR.format(cls=cls, name=cls.lower(), what=what, statement=statement)


@linux
@pytest.mark.parametrize("statement", ["os._exit(3)", "os.kill(os.getpid(), 9)"])
def test_a_worker_that_ends_without_its_result_is_one_line_and_writes_nothing(tmp_path, monkeypatch, statement):
    (tmp_path / "ends.py").write_text(on_turn_four("Ends", "ends its own process", statement))
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("recommend", "--scenario", "oscillation-40", "--seeds", "0:4", *SMALL, "--policies",
                         "naive,ends.py:Ends", "--draws", "20", "--jobs", "2", "--out", tmp_path / "rec")
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith("prunesim: error: --jobs: 2: a worker process ended before its unit was done")
    assert "internal error" not in err and not (tmp_path / "rec").exists()


@pytest.mark.parametrize("statement", ["raise MemoryError", "open('/nonexistent/notes.txt')",
                                       "raise OSError(28, 'No space left on device')",
                                       "raise UserError('--set', 'x', 'the policy refuses it')"])
def test_what_a_policy_raises_is_said_alike_for_any_jobs(tmp_path, monkeypatch, statement):
    (tmp_path / "raises.py").write_text(on_turn_four("Raises", "raises", statement))
    monkeypatch.chdir(tmp_path)
    said = []
    for jobs in ("1", "2"):
        said.append(cli("leaderboard", "--scenario", "oscillation-40", "--seeds", "0:3", *SMALL, "--policies",
                        "noop,raises.py:Raises", "--jobs", jobs, "--out", tmp_path / f"out{jobs}"))
        assert not (tmp_path / f"out{jobs}").exists()
    assert said[0][0] != 0 and len(said[0][2].strip().splitlines()) == 1, said[0]
    assert "internal error" not in said[0][2]
    assert said[1] == said[0]
