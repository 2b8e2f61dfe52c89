"""prunesim plot breakeven, calls.csv, and ledgers written before the cost columns existed."""

from __future__ import annotations

from pathlib import Path

import pytest
from plot_fixtures import make_run, read_rows, write_rows
from prunesim.cli import main
from prunesim.observe.recorder import CALL_COLUMNS, ENGINE_LEDGER_COLUMNS, LEDGER_COLUMNS
from prunesim.plots.io import read_run

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("breakeven")
    return make_run(tmp, "naive", "naive"), make_run(tmp, "gated", "slack-gated")


def test_run_files_carry_calls_and_cost_columns(runs):
    naive = read_run(runs[0], need=("ledger", "calls"))
    assert list(naive.calls[0]) == list(CALL_COLUMNS)
    assert list(naive.ledger[0]) == list(LEDGER_COLUMNS)
    assert LEDGER_COLUMNS[: len(ENGINE_LEDGER_COLUMNS)] == ENGINE_LEDGER_COLUMNS  # appended, not reordered
    total = sum(float(r["cost_usd"]) for r in naive.calls)
    assert total == pytest.approx(naive.metrics["cost_usd"], abs=1e-4)


def test_plot_breakeven_writes_a_figure(runs, tmp_path, capsys):
    out = tmp_path / "be.svg"
    assert main(["plot", "breakeven", str(runs[0]), str(runs[1]), "--out", str(out)]) == 0
    svg = out.read_text()
    assert 'id="cumulative-0"' in svg and 'id="cumulative-1"' in svg
    assert capsys.readouterr().out.strip().endswith("be.svg")


def test_the_pass_panel_has_its_own_legend(runs):
    from prunesim.plots.breakeven import breakeven_figure

    naive, gated = (read_run(p, need=("ledger", "calls")) for p in runs)
    top, bottom = breakeven_figure(naive, gated).axes
    labels = [t.get_text() for t in bottom.get_legend().get_texts()]
    passes = [f"naive, seed 3: {len(naive.ledger)} passes", f"slack-gated, seed 3: {len(gated.ledger)} passes"]
    assert labels[:2] == passes and labels[-1] == "end of the run"
    never = any(float(r["breakeven_turn"]) < 0 for run in (naive, gated) for r in run.ledger)
    assert ("not paid back in the run" in labels) == (never or any(
        float(r["breakeven_turn"]) > max(float(c["turn"]) for c in run.calls) * 1.08
        for run in (naive, gated) for r in run.ledger))
    bars = [ln for ln in bottom.get_lines() if (ln.get_gid() or "").startswith("pass-bar-")]
    assert len(bars) == len(naive.ledger) + len(gated.ledger)
    # the bars' colours are the legend's: one per run
    handles = bottom.get_legend().legend_handles
    assert {ln.get_color() for ln in bars} == {h.get_color() for h in handles[:2]}


def test_breakeven_refuses_runs_of_different_workloads(runs, tmp_path, capsys):
    other = make_run(tmp_path, "seed4", "naive", seed=4)
    out = tmp_path / "x.png"
    assert main(["plot", "breakeven", str(runs[0]), str(other), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "not the same workload" in err and err.count("\n") == 0 and not out.exists()


def test_an_older_run_without_cost_files_gets_one_line(runs, tmp_path, capsys):
    old = make_run(tmp_path, "old", "naive")
    rows = read_rows(old / "ledger.csv")
    write_rows(old / "ledger.csv", [{k: r[k] for k in ENGINE_LEDGER_COLUMNS} for r in rows],
               list(ENGINE_LEDGER_COLUMNS))
    # The ledger plot still reads an old ledger as it is.
    assert main(["plot", "ledger", str(old), "--out", str(tmp_path / "l.png")]) == 0
    assert main(["plot", "breakeven", str(runs[0]), str(old), "--out", str(tmp_path / "b.png")]) == 2
    assert "written by an older prunesim" in capsys.readouterr().err
    (old / "calls.csv").unlink()
    assert main(["plot", "breakeven", str(runs[0]), str(old), "--out", str(tmp_path / "b.png")]) == 2
    err = capsys.readouterr().err.strip()
    assert "calls.csv" in err and err.count("\n") == 0 and not (tmp_path / "b.png").exists()


def test_default_name_of_a_file_policy_figure_is_a_file_beside_the_run(runs, tmp_path):
    policy = f"{ROOT / 'examples' / 'policies' / 'keep_last_outputs.py'}:KeepLastOutputs"
    mine = make_run(tmp_path, "mine", policy)
    assert main(["plot", "breakeven", str(mine), str(runs[0])]) == 0
    assert [p.name for p in mine.glob("breakeven-*")] == ["breakeven-KeepLastOutputs-naive.png"]


FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize("case", ["two transcripts", "two files of one name", "a transcript and a seed",
                                  "other workload parameters"])
def test_breakeven_refuses_two_workloads_under_one_scenario_name_and_seed(tmp_path, capsys, case):
    """The scenario's name and the seed are not the workload: a replay's transcript, the file it read, and the
    parameters that draw a synthetic workload must be the same too, or the two lines are not one comparison."""
    a, b = tmp_path / "a", tmp_path / "b"
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "openai.json").write_text((FIXTURES / "openai.json").read_text().replace("Done.", "Over."))
    first = ["run", "--workload", str(FIXTURES / "openai.json"), "--policy", "noop", "--set", "trigger=600"]
    second = {
        "two transcripts": ["run", "--workload", str(FIXTURES / "mini.traj.json"), "--policy", "recency"],
        "two files of one name": ["run", "--workload", str(tmp_path / "x" / "openai.json"), "--policy", "recency"],
        "a transcript and a seed": ["run", "transcript", "--policy", "recency", "--set", "turns=5"],
        "other workload parameters": None,
    }[case]
    if second is None:
        first = ["run", "oscillation-40", "--policy", "naive"]
        second = ["run", "oscillation-40", "--policy", "slack-gated", "--set", "workload.tool_output.mean=300"]
    assert main([*first, "--out", str(a)]) == 0
    assert main([*second, "--out", str(b)]) == 0
    capsys.readouterr()
    assert main(["plot", "breakeven", str(a), str(b), "--out", str(tmp_path / "be.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"prunesim: error: {b}: ") and "not the same workload" in err[0], err
    assert not (tmp_path / "be.png").exists()
