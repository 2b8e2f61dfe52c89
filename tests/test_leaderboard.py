"""prunesim leaderboard and prunesim plot pareto: every policy on the same transcripts or seeds."""

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest
from prunesim.cli import main
from prunesim.policies import every_policy

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def folder(tmp_path):
    """The good fixture transcripts (one of each format), without the broken ones."""
    out = tmp_path / "transcripts"
    out.mkdir()
    for name in ("mini.traj.json", "openai.json", "openhands.jsonl", "tiny.traj"):
        shutil.copy(FIXTURES / name, out / name)
    return out


def rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_the_same_folder_gives_the_same_csv_twice_byte_for_byte(folder, tmp_path, capsys):
    for out in ("a", "b"):
        assert main(["leaderboard", str(folder), "--policies", "all", "--scenario", "transcript-32k",
                     "--out", str(tmp_path / out)]) == 0
    for name in ("leaderboard.csv", "runs.csv", "leaderboard.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    printed = capsys.readouterr().out
    assert "leaderboard:" in printed and "clear-tool-uses:anthropic" in printed


def test_the_table_reduces_runs_csv_per_policy_and_figure(folder, tmp_path):
    # No agent model: keeping one observation then only saves prompt tokens (under a scaffold's profile the agent
    # fetches again what it needs, and at n=1 that costs more than it saves: tests/test_agent_model.py).
    assert main(["leaderboard", str(folder), "--policies", "noop,observation-masking,llm-summary:codex",
                 "--out", str(tmp_path / "lb"), "--set", "observation_masking.n=1", "--agent", "none"]) == 0
    runs = rows(tmp_path / "lb" / "runs.csv")
    table = rows(tmp_path / "lb" / "leaderboard.csv")
    units = {r["unit"] for r in runs}
    assert len(units) >= 4 and len(runs) == 3 * len(units)
    for r in table:
        figure = r["figure"].removesuffix("_share")
        values = [float(x[figure]) for x in runs if x["policy"] == r["policy"] and x[figure] != ""]
        assert int(r["n"]) == len(values)
        if r["interval"] == "wilson":  # a count's share of units with one or more
            assert float(r["mean"]) == pytest.approx(np.mean([v > 0 for v in values]))
            assert float(r["ci_low"]) <= float(r["mean"]) <= float(r["ci_high"])
            continue
        assert float(r["median"]) == pytest.approx(float(np.median(values)))
        centre = "mean" if r["interval"] == "mean" else "median"  # counts: the interval of the mean
        assert float(r["mean"]) == pytest.approx(float(np.mean(values)), rel=1e-3)
        assert float(r["ci_low"]) <= float(r[centre]) <= float(r["ci_high"])
    noop = {r["figure"]: r for r in table if r["policy"] == "noop"}
    assert float(noop["input_ratio"]["median"]) == 1.0 == float(noop["input_ratio"]["ci_high"])
    masking = {r["figure"]: r for r in table if r["policy"] == "observation-masking"}
    assert float(masking["input_ratio"]["median"]) < 1.0


def test_all_is_every_policy_and_every_preset_once(folder, tmp_path):
    assert main(["leaderboard", str(folder), "--out", str(tmp_path / "lb")]) == 0
    policies = list(dict.fromkeys(r["policy"] for r in rows(tmp_path / "lb" / "leaderboard.csv")))
    assert policies == every_policy()
    assert "clear-tool-uses:langchain" in policies and "clear-tool-uses" not in policies


def test_seeds_of_a_synthetic_scenario(tmp_path):
    assert main(["leaderboard", "--scenario", "oscillation-40", "--seeds", "0:3", "--policies", "naive,slack-gated",
                 "--out", str(tmp_path / "lb")]) == 0
    runs = rows(tmp_path / "lb" / "runs.csv")
    assert [r["unit"] for r in runs] == ["seed 0", "seed 0", "seed 1", "seed 1", "seed 2", "seed 2"]
    assert [r["policy"] for r in runs[:2]] == ["naive", "slack-gated"]  # noop ran as the reference, unlisted


def test_the_pareto_plot_reads_the_csv_only(folder, tmp_path):
    assert main(["leaderboard", str(folder), "--policies", "noop,observation-masking:swe-agent,recency",
                 "--out", str(tmp_path / "lb")]) == 0
    assert main(["plot", "pareto", str(tmp_path / "lb" / "leaderboard.csv"), "--out", str(tmp_path / "p.png")]) == 0
    first = (tmp_path / "p.png").read_bytes()
    assert first.startswith(b"\x89PNG")
    assert main(["plot", "pareto", str(tmp_path / "lb"), "--out", str(tmp_path / "q.png")]) == 0
    assert (tmp_path / "q.png").read_bytes() == first


BAD = [
    ("unknown policy", "leaderboard {folder} --policies noop,magic --out {out}", "unknown policy 'magic'"),
    ("policy twice", "leaderboard {folder} --policies noop,noop --out {out}", "given twice"),
    ("keep below 0", "leaderboard {folder} --set clear_tool_uses.keep=-2 --out {out}", "clear_tool_uses.keep"),
    ("threshold above the window", "leaderboard {folder} --set memory_pressure.evict_at=1.5 --out {out}",
     "above the window"),
    ("no such folder or file", "leaderboard {tmp}/nowhere --out {out}", "does not exist"),
    ("no transcript in it", "leaderboard {empty} --out {out}", "holds no transcript"),
    ("neither folder nor scenario", "leaderboard --out {out}", "give a folder or file of transcripts"),
    ("out is a file", "leaderboard {folder} --out {file}", "exists and is not a folder"),
    ("pareto of nothing", "plot pareto {tmp}/none.csv --out {tmp}/p.png", "no such leaderboard"),
    ("seeds with a folder", "leaderboard {folder} --seeds 0:3 --out {out}", "--seeds"),
    ("seed without a folder", "leaderboard --scenario oscillation-40 --seed 3 --out {out}", "--seed"),
    ("bad seeds", "leaderboard --scenario oscillation-40 --seeds 5:2 --out {out}", "--seeds"),
    ("unknown scenario", "leaderboard {folder} --scenario nowhere-9 --out {out}", "unknown scenario"),
]


@pytest.mark.parametrize("name, argv, words", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_one_line_and_exit_2(name, argv, words, folder, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("mine")
    args = argv.format(folder=folder, out=tmp_path / "out", tmp=tmp_path, empty=tmp_path / "empty",
                       file=tmp_path / "file").split()
    assert main(args) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("prunesim: error:")]
    assert len(errors) == 1 and words in errors[0], err
    assert not (tmp_path / "out").exists() and not (tmp_path / "p.png").exists()
    assert (tmp_path / "file").read_text() == "mine"


@pytest.mark.parametrize("name", ["openai.json", "tiny.traj"])
def test_one_transcript_file_is_a_leaderboard_over_one_unit_that_says_so_first(name, folder, tmp_path, capsys):
    """As replay-dir takes it: the file's run is the only unit, and the first line says the intervals cannot
    reach beyond it; the files are those of the same transcript alone in a folder."""
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(folder / name, alone / name)
    assert main(["leaderboard", str(folder / name), "--policies", "noop,recency", "--out", str(tmp_path / "f")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"leaderboard: ONE transcript (1 transcript(s) in {folder / name}): ")
    assert "nothing here says how a policy does on other transcripts" in first
    assert main(["leaderboard", str(alone), "--policies", "noop,recency", "--out", str(tmp_path / "d")]) == 0
    assert capsys.readouterr().out.startswith("leaderboard: ONE transcript")  # the unit count says it, not the path
    for out in ("leaderboard.csv", "runs.csv"):
        assert (tmp_path / "f" / out).read_bytes() == (tmp_path / "d" / out).read_bytes()
    assert len(rows(tmp_path / "f" / "runs.csv")) == 2


def test_a_workload_file_is_a_leaderboard_too_and_two_units_are_not_called_one(folder, tmp_path, capsys):
    assert main(["import", str(folder / "openai.json"), "--out", str(tmp_path / "w.workload.jsonl")]) == 0
    capsys.readouterr()
    assert main(["leaderboard", str(tmp_path / "w.workload.jsonl"), "--policies", "noop",
                 "--out", str(tmp_path / "lb")]) == 0
    assert capsys.readouterr().out.startswith("leaderboard: ONE transcript (1 transcript(s) in ")
    assert [r["unit"] for r in rows(tmp_path / "lb" / "runs.csv")] == ["openai"]
    assert main(["leaderboard", str(folder), "--policies", "noop", "--out", str(tmp_path / "all")]) == 0
    assert "ONE" not in capsys.readouterr().out.splitlines()[0]


def test_a_transcript_the_leaderboard_would_write_over_is_refused(folder, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(folder / "openai.json", out / "leaderboard.json")  # a transcript under an output's name
    before = (out / "leaderboard.json").read_bytes()
    assert main(["leaderboard", str(out / "leaderboard.json"), "--policies", "noop", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "holds leaderboard.json, a transcript this leaderboard reads" in err
    assert (out / "leaderboard.json").read_bytes() == before and sorted(p.name for p in out.iterdir()) == [
        "leaderboard.json"]


def test_a_broken_transcript_writes_nothing(folder, tmp_path, capsys):
    shutil.copy(FIXTURES / "bad" / "broken.json", folder / "broken.json")
    assert main(["leaderboard", str(folder), "--policies", "noop", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "broken.json" in err and "nothing written" in err
    assert not (tmp_path / "out").exists()


def test_pareto_refuses_a_figure_the_leaderboard_lacks(folder, tmp_path, capsys):
    assert main(["leaderboard", str(folder), "--policies", "noop", "--out", str(tmp_path / "lb")]) == 0
    assert main(["plot", "pareto", str(tmp_path / "lb"), "--y", "happiness", "--out", str(tmp_path / "p.png")]) == 2
    assert "--y: happiness: not a figure of this leaderboard" in capsys.readouterr().err
