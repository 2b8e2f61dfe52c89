"""The less-travelled commands under hostile input: one line naming the file or flag, exit 2, nothing written."""

import json

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


def _transcripts(folder, runs=2):
    """Small mini-swe-agent runs, as the agent writes them."""
    folder.mkdir()
    for i in range(runs):
        messages = [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "fix"}]
        for k in range(4):
            messages.append({"role": "assistant", "content": f"THOUGHT: look {k}\n\n```bash\ncat file{i}_{k}.py\n```"})
            messages.append({"role": "user", "content": f"<returncode>0</returncode><output>{'x ' * 50}</output>"})
        (folder / f"run{i}.traj.json").write_text(json.dumps({"messages": messages}))
    return folder


@pytest.mark.parametrize("where", ["same", "inside"])
def test_leaderboard_refuses_to_write_into_the_folder_it_reads(tmp_path, where):
    runs = _transcripts(tmp_path / "runs")
    out = runs if where == "same" else runs / "board"
    before = sorted(p.name for p in runs.iterdir())
    code, stdout, err = cli("leaderboard", runs, "--policies", "noop", "--out", out)
    assert code == 2 and sorted(p.name for p in runs.iterdir()) == before
    assert err.splitlines() == [f"prunesim: error: --out: {out}: is inside the folder it reads ({runs}); "
                                "what it writes would be read as input next time: write elsewhere"]
    assert cli("leaderboard", runs, "--policies", "noop", "--out", tmp_path / "board")[0] == 0


@pytest.mark.parametrize("where", ["same", "inside"])
def test_import_refuses_to_write_workloads_into_the_folder_it_reads(tmp_path, where):
    runs = _transcripts(tmp_path / "runs")
    out = runs if where == "same" else runs / "workloads"
    before = sorted(p.name for p in runs.iterdir())
    code, stdout, err = cli("import", runs, "--out", f"{out}/")
    assert code == 2 and sorted(p.name for p in runs.iterdir()) == before
    assert err.splitlines() == [f"prunesim: error: --out: {out}/: is inside the folder it reads ({runs}); "
                                "what it writes would be read as input next time: write elsewhere"]


def test_fidelity_refuses_a_fit_out_that_the_next_read_of_its_folder_would_take_for_a_transcript(tmp_path):
    runs = _transcripts(tmp_path / "runs")
    out = runs / "fit.json"
    code, stdout, err = cli("fidelity", runs, "--fit-out", out)
    assert code == 2 and stdout == "" and not out.exists()
    assert err.splitlines() == [f"prunesim: error: --fit-out: {out}: is inside the folder it reads ({runs}); "
                                "what it writes would be read as input next time: write elsewhere"]


SEED_COMMANDS = [
    ["replay", "oscillation"],
    ["compare", "oscillation-40"],
    ["leaderboard", "--scenario", "oscillation-40", "--policies", "noop", "--out", "{out}"],
    ["calibrate", "oscillation-40", "--targets", "seed-000", "--params", "gate.lead", "--out", "{out}"],
]


@pytest.mark.parametrize("argv", SEED_COMMANDS)
def test_a_seed_given_twice_is_refused_not_counted_twice(tmp_path, argv):
    out = tmp_path / "out"
    code, stdout, err = cli(*[a.replace("{out}", str(out)) for a in argv], "--seeds", "1,2,1")
    assert code == 2 and stdout == "" and not out.exists()
    assert err.splitlines() == ["prunesim: error: --seeds: 1,2,1: a seed is given twice (1)"]


@pytest.mark.parametrize("table,value", [("weights", 1e308), ("weights", 1e9), ("frames", 1e300)])
def test_a_calibration_with_an_absurd_size_is_refused_before_import(tmp_path, table, value):
    from importlib import resources

    shipped = json.loads(resources.files("prunesim.io.transcripts").joinpath("calibrations.json").read_text())
    sizes = shipped["profiles"][0]["tokenizers"]["pieces"][table]
    sizes["user"] = [value] * len(sizes["user"]) if table == "weights" else value
    calibration = tmp_path / "cal.json"
    calibration.write_text(json.dumps(shipped))
    runs = _transcripts(tmp_path / "runs", runs=1)
    out = tmp_path / "run.jsonl"
    code, stdout, err = cli("import", runs / "run0.traj.json", "--calibration", calibration, "--out", out)
    assert code == 2 and not out.exists()
    assert len(err.splitlines()) == 1
    assert err.startswith(f"prunesim: error: {calibration}: profiles[0]: tokenizers.pieces.{table}.user: ")


@pytest.mark.parametrize("window", [-1, 0, "big", 1.5])
def test_a_workload_header_with_an_impossible_context_window_is_refused(tmp_path, window):
    runs = _transcripts(tmp_path / "runs", runs=1)
    workload = tmp_path / "run.workload.jsonl"
    assert cli("import", runs / "run0.traj.json", "--out", workload)[0] == 0
    header, *parts = workload.read_text().splitlines()
    workload.write_text("\n".join([json.dumps({**json.loads(header), "context_window": window}), *parts]) + "\n")
    code, stdout, err = cli("run", "--workload", workload, "--policy", "noop", "--trace", "none")
    assert code == 2 and stdout == ""
    assert err.splitlines() == [f"prunesim: error: {workload}:1: context_window: must be null or an integer from "
                                f"1 to 1000000000000 (got {json.dumps(window)})"]


def _calibration(tmp_path, name="cal.json"):
    from importlib import resources

    calibration = tmp_path / name
    calibration.write_text(resources.files("prunesim.io.transcripts").joinpath("calibrations.json").read_text())
    return calibration


@pytest.mark.parametrize("command", ["replay-dir", "import", "fidelity"])
def test_an_output_onto_the_calibration_file_read_is_refused(tmp_path, command):
    runs = _transcripts(tmp_path / "runs", runs=1)
    calibration = _calibration(tmp_path, "cal.jsonl" if command == "import" else "cal.json")  # import: a file
    before = calibration.read_bytes()
    flag = "--fit-out" if command == "fidelity" else "--out"
    source = runs if command != "import" else runs / "run0.traj.json"
    extra = ["--policies", "noop"] if command == "replay-dir" else []
    code, stdout, err = cli(command, source, *extra, "--calibration", calibration, flag, calibration)
    assert code == 2 and stdout == "" and calibration.read_bytes() == before
    assert err.splitlines() == [f"prunesim: error: {flag}: {calibration}: is an input of this command "
                                f"({calibration}); give another file"]


def test_calibrate_refuses_to_write_over_its_targets_file_even_with_force(tmp_path):
    from prunesim.io.scenario_files import resolve_path

    targets = tmp_path / "targets.toml"
    targets.write_text((resolve_path("oscillation-40").parent / "targets" / "seed-000.toml").read_text())
    before = targets.read_bytes()
    code, stdout, err = cli("calibrate", "oscillation-40", "--targets", targets, "--params", "gate.lead",
                            "--seeds", "0:1", "--max-evals", "2", "--quiet", "--out", targets, "--force")
    assert code == 2 and stdout == "" and targets.read_bytes() == before
    assert err.splitlines() == [f"prunesim: error: --out: {targets}: is an input of this command ({targets}); "
                                "give another file"]
