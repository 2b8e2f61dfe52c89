"""A long run says up front what it will take, shows its progress, and writes the same files as any run.

The threshold and the pilots are made small here (a long run is hours); what is checked is what the user is
told and that it comes from the run itself: the files' size is what the two pilots' files extend to.
"""

from __future__ import annotations

import io
import re

import pytest
from cli_capture import cli
from prunesim.cli.commands import _long_run
from prunesim.studies import estimate

TURNS = 1_500


@pytest.fixture
def small(monkeypatch):
    monkeypatch.setattr(_long_run, "LARGE_TURNS", 1_000)
    monkeypatch.setattr(_long_run, "pilots", lambda turns: (100, 300))
    monkeypatch.setattr(estimate, "pilots", lambda turns: (100, 300))


def test_a_long_run_says_what_it_will_take_then_how_far_it_is(small, tmp_path):
    code, out, err = cli("run", "oscillation-40", "--set", f"turns={TURNS}", "--out", tmp_path / "run")
    assert code == 0, err
    lines = err.splitlines()
    assert lines[0] == f"prunesim: run: {TURNS:,} turns: measuring what it will take on 100 and 300 turns of it first"
    said = re.fullmatch(r"prunesim: run: about .+ on this machine \(.+ us a turn\); memory (.+) at 300 turns, at "
                        r"most (.+) at the end \(if it grew all run long as it did between the two\); files in "
                        r"--out about (.+) \(--trace all\)", lines[1])
    assert said, lines[1]
    progress = [line for line in lines[2:] if line.startswith("prunesim: run: ")]
    assert [int(re.match(r"prunesim: run: (\d+)%", p).group(1)) for p in progress] == list(range(10, 100, 10))
    written = sum(p.stat().st_size for p in (tmp_path / "run").iterdir())
    estimated = _bytes(said.group(3))
    assert 0.8 * written <= estimated <= 1.25 * written, (estimated, written)


def _bytes(text: str) -> float:
    number, unit = text.split()
    return float(number.replace(",", "")) * {"KB": 2**10, "MB": 2**20, "GB": 2**30, "TB": 2**40}[unit]


def test_a_long_run_writes_the_same_files_as_a_short_one(small, tmp_path, monkeypatch):
    assert cli("run", "oscillation-40", "--set", f"turns={TURNS}", "--out", tmp_path / "long")[0] == 0
    monkeypatch.setattr(_long_run, "LARGE_TURNS", 10**9)
    assert cli("run", "oscillation-40", "--set", f"turns={TURNS}", "--out", tmp_path / "plain")[0] == 0
    for name in ("summary.json", "trace.csv", "ledger.csv", "events.csv", "calls.csv", "scenario.json"):
        assert (tmp_path / "long" / name).read_bytes() == (tmp_path / "plain" / name).read_bytes(), name


def test_without_out_it_says_no_files_and_prints_the_summary(small):
    code, out, err = cli("run", "oscillation-40", "--set", f"turns={TURNS}")
    assert code == 0 and out.startswith("oscillation-40 under naive")
    assert "files in --out" not in err and "memory" in err


def test_a_short_run_says_nothing_of_the_kind():
    code, out, err = cli("run", "oscillation-40", "--set", "turns=50")
    assert code == 0 and err == ""


def test_on_a_terminal_the_progress_is_a_bar():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    bar = _long_run.TurnProgress(5_000, stream)
    for turn in range(1, 5_001):
        bar.on_turn_end(0.0, turn, 0, 0, 0)
    assert bar.bar.n == 5_000 and "/5.00k [" in stream.getvalue()  # tqdm's bar, over the run's turns
    bar.close()


def test_too_much_memory_or_disk_is_a_warning(monkeypatch, tmp_path):
    est = estimate.Estimate(10**9, (1, 3), 1e6, 1e-3, 10**6, 10**15, 10**16)
    monkeypatch.setattr(_long_run, "machine_memory", lambda: 10**12)
    lines = _long_run._too_much(est, tmp_path / "out")
    assert lines[0].startswith("the run may need up to 909.5 TB of memory; this machine has 931.3 GB")
    assert lines[1].startswith(f"--out: {tmp_path / 'out'}: the run's files need about 9,094.9 TB;")


def test_a_run_whose_short_runs_are_no_scenario_goes_on_without_figures(small, tmp_path):
    """A scripted event past the pilots' end makes them invalid: the long run is not refused for that."""
    path = tmp_path / "late.toml"
    path.write_text(f'extends = "oscillation-40"\nturns = {TURNS}\n[[workload.events]]\nturn = {TURNS - 10}\n'
                    'kind = "tool_output"\ntokens = 500\n')
    code, out, err = cli("run", path)
    assert code == 0, err
    assert err.splitlines()[1] == ("prunesim: run: no estimate: 100 turns of it are not a scenario "
                                   f"(workload.events[0].turn: {TURNS - 10} is after the last turn 100); the run "
                                   "goes on")
