"""The command line: outputs, and one clear line with exit code 2 for every bad input."""

import json
import subprocess
import sys

import pytest
from prunesim.cli import main


def test_run_writes_every_file_and_prints_a_summary(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "oscillation-40", "--policy", "naive", "--seed", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "oscillation-40 under naive, seed 2" in printed
    for name in ("trace.csv", "ledger.csv", "events.csv", "summary.json", "scenario.json"):
        assert (out / name).is_file()
    record = json.loads((out / "summary.json").read_text())
    assert record["policy"] == "naive" and record["seed"] == 2
    assert record["metrics"]["passes"] > 0
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_run_json_is_the_summary_record(capsys):
    assert main(["run", "oscillation-40", "--seed", "1", "--json", "--set", "trigger=20000"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["trigger"] == 20000
    assert isinstance(record["metrics"]["overhead_ratio"], (int, float, str))


def test_overhead_ratio_is_written_as_inf_when_nothing_net_was_freed(capsys):
    # A rationale so long that no pass can pay for itself.
    args = ["run", "oscillation-40", "--json", "--set", "decision.rationale_per_span=3000"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["overhead_ratio"] == "inf"


def test_list_shows_scenarios_and_policies(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "oscillation-40" in out and "naive" in out and "recency" in out and "noop" in out


BAD = [
    (["run", "no-such-scenario"], "unknown scenario"),
    (["run", "oscillation-40", "--policy", "nope"], "unknown policy"),
    (["run", "oscillation-40", "--set", "trigger"], "expected key=value"),
    (["run", "oscillation-40", "--set", "trigger=lots"], "trigger: must be an integer"),
    (["run", "oscillation-40", "--set", "budget=99999"], "budget: 99999 is above the window"),
    (["run", "oscillation-40", "--set", "workload.tool_output.mean=-3"], "workload.tool_output.mean"),
    (["run", "oscillation-40", "--set", "bogus=1"], "bogus: unknown key"),
    (["run", "oscillation-40", "--seed", "-1"], "--seed"),
    (["run", "oscillation-40", "--frobnicate"], "unrecognized arguments"),
    (["replay", "nothing"], "unknown replay"),
    (["replay", "oscillation", "--seeds", "5:2"], "--seeds"),
    (["nosuchcommand"], "invalid choice"),
]


@pytest.mark.parametrize("argv, words", BAD)
def test_bad_input_is_one_line_exit_2_and_no_output(tmp_path, capsys, argv, words):
    out = tmp_path / "out"
    extra = ["--out", str(out)] if argv[0] == "run" else []
    assert main(argv + extra) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err
    assert not out.exists()


def test_malformed_scenario_file_from_a_real_process(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("turns = 40\nwindow = [\n")
    proc = subprocess.run(
        [sys.executable, "-m", "prunesim", "run", str(bad), "--out", str(tmp_path / "o")],
        capture_output=True, text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and str(bad) in proc.stderr and "malformed TOML" in proc.stderr
    assert proc.stdout == "" and not (tmp_path / "o").exists()


def test_out_that_is_a_file_is_refused(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("keep me")
    assert main(["run", "oscillation-40", "--out", str(target)]) == 2
    assert target.read_text() == "keep me"


def _subcommands():
    import argparse

    from prunesim.cli import build_parser

    out = []
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.append([name])
                for sub_action in sub._actions:
                    if isinstance(sub_action, argparse._SubParsersAction):
                        out.extend([name, inner] for inner in sub_action.choices)
    return out


@pytest.mark.parametrize("argv", _subcommands(), ids=" ".join)
def test_every_command_has_working_help(argv, capsys):
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    assert "usage: prunesim" in capsys.readouterr().out


def test_a_run_written_over_another_leaves_none_of_the_old_runs_files(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "reentrancy-60", "--policy", "tombstoned", "--set", "turns=45", "--out", str(out)]) == 0
    assert (out / "editlog.jsonl").is_file()
    assert main(["run", "reentrancy-60", "--policy", "naive", "--set", "turns=45", "--out", str(out)]) == 0
    assert not (out / "editlog.jsonl").exists()
    assert json.loads((out / "summary.json").read_text())["policy"] == "naive"
