"""Many runs, or one long replay, say up front what they will take and show how far they have come, as a long
``run`` does: ``sweep`` and ``compare`` past a number of turns in all, ``run --workload`` of a long workload.

The thresholds are made small here (a long study is hours); what is checked is what the user is told, that the
results are the same bytes as the study's without it, and that short studies say nothing of the kind.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from cli_capture import cli
from hypothesis import given
from hypothesis import strategies as st
from prunesim.cli.commands import _long_run
from prunesim.studies import estimate
from prunesim.studies.progress import STEPS, Progress

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROGRESS = re.compile(r"prunesim: (\w+): (\d+)% \(([\d,]+) of ([\d,]+) (\w+)s\), about .+ left")


@pytest.fixture
def small(monkeypatch):
    monkeypatch.setattr(_long_run, "LARGE_STUDY_TURNS", 500)
    monkeypatch.setattr(estimate, "SAMPLE_SECONDS", 0.01)


def _progress(lines: list[str], command: str) -> list[int]:
    found = [PROGRESS.fullmatch(line) for line in lines]
    assert all(m.group(1) == command for m in found if m)
    return [int(m.group(2)) for m in found if m]


def test_a_long_compare_says_what_it_will_take_then_how_far_it_is(small, monkeypatch):
    argv = ("compare", "oscillation-40", "--policies", "noop,naive", "--seeds", "0:20", "--set", "turns=60")
    code, out, err = cli(*argv)
    assert code == 0, err
    lines = err.splitlines()
    assert lines[0] == "prunesim: compare: 40 runs, 2,400 turns in all: measuring what they will take first"
    assert re.fullmatch(r"prunesim: compare: about .+ on this machine \(timed on \d+ of its runs\); memory at most "
                        r"[\d.,]+ [KMG]B a run", lines[1]), lines[1]
    assert _progress(lines[2:], "compare") == list(range(10, 100, 10))
    monkeypatch.setattr(_long_run, "LARGE_STUDY_TURNS", 10**12)
    assert cli(*argv) == (0, out, "")  # the same table, and nothing said of a short comparison


def test_a_long_sweep_says_what_it_will_take_and_resumes_saying_only_what_is_left(small, tmp_path, monkeypatch):
    argv = ("sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies", "naive", "--set", "turns=60",
            "--jobs", "1", "--engine", "simpy")
    code, _, err = cli(*argv, "--seeds", "0:10", "--out", tmp_path / "s")
    assert code == 0, err
    lines = err.splitlines()
    assert lines[0] == "prunesim: sweep: 20 runs, 1,200 turns in all: measuring what they will take first"
    assert re.fullmatch(r"prunesim: sweep: about .+ on this machine \(timed on \d+ of its runs\); memory at most "
                        r"[\d.,]+ [KMG]B a run", lines[1]), lines[1]
    shares = _progress(lines[2:], "sweep")  # runs come back in batches: a line at each tenth passed
    assert 3 <= len(shares) <= 9 and shares == sorted(set(shares)) and shares[-1] < 100, shares
    runs = tmp_path / "s" / "runs.csv"  # a sweep stopped after its first 8 runs
    runs.write_text("".join(runs.read_text().splitlines(keepends=True)[:9]))
    code, _, err = cli(*argv, "--seeds", "0:10", "--out", tmp_path / "s")
    assert code == 0 and err.splitlines()[0].startswith("prunesim: sweep: 12 runs, 720 turns in all"), err
    assert min(_progress(err.splitlines(), "sweep"), default=50) > 40  # counted from the runs already done
    monkeypatch.setattr(_long_run, "LARGE_STUDY_TURNS", 10**12)
    code, _, err = cli(*argv, "--seeds", "0:10", "--out", tmp_path / "plain")
    assert code == 0 and "prunesim: sweep:" not in err
    assert (tmp_path / "s" / "runs.csv").read_bytes() == (tmp_path / "plain" / "runs.csv").read_bytes()


def test_a_quiet_sweep_and_a_run_of_many_jobs_say_it_their_way(small, tmp_path):
    argv = ("sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies", "naive", "--set", "turns=60",
            "--seeds", "0:10", "--engine", "simpy")
    code, _, err = cli(*argv, "--jobs", "1", "--quiet", "--out", tmp_path / "q")
    assert code == 0 and "prunesim: sweep:" not in err  # --quiet: no progress, and no announcement of one
    code, _, err = cli(*argv, "--jobs", "2", "--out", tmp_path / "two")
    said = err.splitlines()[1]
    assert code == 0 and ("with 2 runs at once" in said) == ((_long_run.os.cpu_count() or 1) > 1), said


def test_a_long_workload_says_its_time_once_a_hundredth_has_run(monkeypatch):
    code, out, quiet_err = cli("run", "--workload", FIXTURES / "openai.json")
    assert code == 0
    monkeypatch.setattr(_long_run, "LARGE_TURNS", 2)
    code, long_out, err = cli("run", "--workload", FIXTURES / "openai.json")
    assert code == 0 and long_out == out
    lines = [line for line in err.splitlines() if line not in quiet_err.splitlines()]
    turns = int(re.search(r": ([\d,]+) recorded turns", lines[0]).group(1).replace(",", ""))
    assert lines[0].startswith("prunesim: run: ") and turns >= 2
    assert re.fullmatch(rf"prunesim: run: turn 1 of {turns:,} reached in .+: about .+ for the whole replay at that "
                        "pace", lines[1]), lines[1]
    assert all(PROGRESS.fullmatch(line) for line in lines[2:]), lines


def test_a_short_workload_says_nothing_of_the_kind():
    code, _, err = cli("run", "--workload", FIXTURES / "openai.json")
    assert code == 0 and "recorded turns" not in err and "%" not in err


class _Log(io.StringIO):
    def isatty(self):
        return False


@given(total=st.integers(1, 5_000), initial=st.integers(0, 5_000),
       chunks=st.lists(st.integers(1, 400), min_size=1, max_size=60))
def test_progress_lines_rise_stay_below_the_whole_and_are_at_most_one_a_tenth(total, initial, chunks):
    initial = min(initial, total)
    log = _Log()
    progress = Progress(total, "run", "sweep", initial, stream=log)
    done = initial
    for n in chunks:
        n = min(n, total - done)
        if n == 0:
            break
        progress.update(n)
        done += n
    shares = [int(PROGRESS.fullmatch(line).group(2)) for line in log.getvalue().splitlines()]
    counts = [int(PROGRESS.fullmatch(line).group(3).replace(",", "")) for line in log.getvalue().splitlines()]
    assert counts == sorted(set(counts)) and all(initial < c < total for c in counts)
    assert shares == sorted(shares) and len(shares) <= STEPS
