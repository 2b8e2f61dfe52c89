"""The less-travelled commands under hostile input: one line naming the file or flag, exit 2, nothing written."""

import pytest
from cli_capture import cli
from plot_fixtures import make_sweep


def test_replay_dir_on_an_empty_folder_names_the_folder(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "rows.csv"
    code, stdout, err = cli("replay-dir", empty, "--policies", "noop", "--out", out)
    assert code == 2 and stdout == "" and not out.exists()
    assert err.splitlines() == [f"prunesim: error: {empty}: no transcript or workload files found"]


def _leaderboard(folder):
    folder.mkdir()
    rows = ["policy,figure,n,median,mean,ci_low,ci_high"]
    for policy, ratio in (("noop", 1.0), ("naive", 0.8)):
        rows += [f"{policy},input_ratio,3,{ratio},{ratio},{ratio},{ratio}", f"{policy},re_retrievals,3,0,0,0,0"]
    (folder / "leaderboard.csv").write_text("\n".join(rows) + "\n")
    return folder


def test_plot_pareto_with_a_deeply_nested_leaderboard_json_is_one_line(tmp_path):
    board = _leaderboard(tmp_path / "board")
    (board / "leaderboard.json").write_text("[" * 100_000 + "]" * 100_000)
    out = tmp_path / "pareto.png"
    code, _, err = cli("plot", "pareto", board, "--out", out)
    assert code == 2 and not out.exists()
    assert err.splitlines() == [f"prunesim: error: {board / 'leaderboard.json'}: JSON nested too deeply to read"]


@pytest.mark.parametrize("kind", ["sweep", "phase"])
@pytest.mark.parametrize("column", ["policy", "run_id", "seed"])
def test_plotting_an_identity_column_is_refused(tmp_path, kind, column):
    sweep = make_sweep(tmp_path)
    out = tmp_path / "figure.png"
    extra = ["--x", "trigger", "--y", "decision.rationale_per_span", "--policy", "naive"] if kind == "phase" else \
        ["--x", "trigger"]
    code, _, err = cli("plot", kind, sweep, "--metric", column, *extra, "--out", out)
    assert code == 2 and not out.exists()
    assert err.splitlines() == [f"prunesim: error: --metric: {column}: names the run, not a metric of it "
                                "(prunesim metrics lists them)"]



@pytest.mark.parametrize("command", ["import", "fidelity", "run"])
def test_a_deeply_nested_jsonl_line_is_one_line_naming_the_file(tmp_path, command):
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    out = tmp_path / "out.jsonl"
    argv = {"import": ["import", deep, "--out", out], "fidelity": ["fidelity", deep],
            "run": ["run", "--workload", deep, "--policy", "noop"]}[command]
    code, _, err = cli(*argv)
    assert code == 2 and not out.exists()
    assert len(err.splitlines()) == 1 and err.startswith(f"prunesim: error: {deep}") and "internal" not in err
