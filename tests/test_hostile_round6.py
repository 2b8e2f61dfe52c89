"""Defects found attacking replays that keep the trace asked for, tables checked per policy, the sweep's
engine choice on a resumed sweep and the kernel's passless policies, each pinned by a test."""

from __future__ import annotations

import json
from pathlib import Path

from cli_capture import cli

FIXTURES = Path(__file__).parent / "fixtures"
MODEL = "google/gemini-3-pro-preview"


def _long_trajectory(path: Path, turns: int) -> Path:
    """A mini-swe-agent run of ``turns`` commands over 50 files (written here, not real data)."""
    messages = [{"role": "system", "content": "You run one bash command per turn."},
                {"role": "user", "content": "<pr_description>Fix it</pr_description>"}]
    for i in range(turns):
        usage = {"prompt_tokens": 100 + 50 * i, "completion_tokens": 20}
        messages.append({"role": "assistant", "content": f"THOUGHT: look {i}.\n\n```bash\ncat file{i % 50}.py\n```",
                         "extra": {"response": {"model": MODEL, "usage": usage, "created": 1763400000 + 20 * i}}})
        messages.append({"role": "user", "content": "<returncode>0</returncode>\n<output>\n"
                         + "line of code here\n" * 40 + "</output>"})
    path.write_text(json.dumps({"info": {"exit_status": "Submitted", "config": {"model": {"model_name": MODEL}}},
                                "messages": messages}))
    return path


def test_a_replay_written_with_no_trace_keeps_its_ledger_events_and_calls(tmp_path):
    """``run --workload F --out D --trace none`` leaves trace.csv empty, and only it: the ledger, events and
    calls are written as a synthetic run's are (plot ledger and plot breakeven read them), byte for byte what
    ``--trace all`` writes."""
    written = {}
    for trace in ("none", "all"):
        code, _, err = cli("run", "--workload", FIXTURES / "mini.traj.json", "--policy", "naive", "--set",
                           "budget=60", "--set", "trigger=40", "--out", tmp_path / trace, "--trace", trace)
        assert code == 0, err
        written[trace] = {f: (tmp_path / trace / f).read_text() for f in
                          ("ledger.csv", "events.csv", "calls.csv", "summary.json", "scenario.json")}
    assert len(written["all"]["ledger.csv"].splitlines()) > 1  # the naive policy ran passes
    assert written["none"] == written["all"]
    assert (tmp_path / "none" / "trace.csv").read_text().count("\n") == 1  # its header only


def test_a_long_replay_written_with_no_trace_keeps_its_whole_edit_log(tmp_path):
    """A tombstoned replay with more edit-log records than an unrecorded run keeps in memory: with --trace none
    it was an internal error (the log's tail cannot be written); it is streamed to editlog.jsonl whole."""
    workload = _long_trajectory(tmp_path / "long.traj.json", 300)
    out = {}
    for trace in ("none", "turns"):
        # --agent none: all 300 recorded turns (mini-swe-agent's profile stops the agent at its 250-call cap)
        code, _, err = cli("run", "--workload", workload, "--policy", "tombstoned", "--set", "trigger=3000",
                           "--set", "budget=4000", "--out", tmp_path / trace, "--trace", trace, "--agent", "none")
        assert code == 0, err
        out[trace] = (tmp_path / trace / "editlog.jsonl").read_text()
    assert out["none"].count("\n") > 1024 and out["none"] == out["turns"]


def test_a_scenario_file_that_names_no_policy_runs_under_the_default_one(tmp_path):
    """Checking the tables of the policy in play took the data's ``policy`` key, absent from a file that relies
    on the default: every such file was an internal error."""
    scenario = tmp_path / "plain.toml"
    scenario.write_text("turns = 5\n")
    code, out, err = cli("run", scenario)
    assert code == 0 and err == "", err
    assert out.startswith("plain under naive, seed 0: 5 turns")


def test_a_grid_point_is_not_refused_for_the_scenario_files_own_policy_when_it_is_not_swept(tmp_path):
    """A scenario file whose own policy is slack-gated, swept under naive only: its point trigger=18,000 puts
    slack-gated's gate above the budget, which no run of the sweep reads (the same --set, without a grid, ran).
    Sweeping slack-gated there is still refused."""
    from prunesim.studies.sweep import plan_sweep

    scenario = tmp_path / "gated.toml"
    scenario.write_text('extends = "reentrancy-60"\npolicy = "slack-gated"\n')
    plan = plan_sweep(str(scenario), {"trigger": [0, 18000]}, ["naive"], [0])
    assert [plan.scenarios[r.point].trigger for r in plan.runs] == [0, 18000]
    code, _, err = cli("sweep", scenario, "--policies", "naive", "--grid", "trigger=0,18000", "--seeds", "0:2",
                       "--out", tmp_path / "sweep")
    assert code == 0, err
    code, _, err = cli("sweep", scenario, "--grid", "trigger=0,18000", "--seeds", "0:2", "--out", tmp_path / "own")
    assert code == 2 and err.startswith("prunesim: error: --grid point trigger=18000: gate.lead: -16000")
    assert not (tmp_path / "own").exists()


def test_a_fresh_auto_sweep_at_the_threshold_runs_every_run_on_the_engine_its_line_names(tmp_path, capsys,
                                                                                           monkeypatch):
    """A fresh sweep of 320 turns where auto needs 300: its stderr line says the kernel. The first run (the
    column probe) ran there, then the choice made again under the lock counted that probe as done (280 turns
    left) and ran the other seven on SimPy: the kernel loaded for one run, and the line untrue."""
    import pytest

    pytest.importorskip("numba")
    from prunesim.cli import main
    from prunesim.kernel import choice
    from prunesim.studies import sweep

    engines = []
    monkeypatch.setattr(choice, "auto_min_turns", lambda: 300)
    real_batch = sweep.run_batch

    def spy(scenario, policy, items, traces_dir, engine="simpy"):
        engines.extend([engine] * len(items))
        return real_batch(scenario, policy, items, traces_dir, engine)

    monkeypatch.setattr(sweep, "run_batch", spy)
    assert main(["sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies", "naive", "--seeds",
                 "0:4", "--jobs", "1", "--quiet", "--engine", "auto", "--out", str(tmp_path / "s")]) == 0
    assert "sweep: engine: kernel for naive" in capsys.readouterr().err
    assert engines == ["kernel"] * 8


def test_replay_dir_with_a_grid_checks_the_points_it_runs_not_the_base(tmp_path):
    """replay-dir --grid runs only the grid's points (unlike a leaderboard, which also runs every policy at its
    documented setting): a base [gate] the grid replaces was refused for slack-gated, as sweep does not."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "mini.traj.json").write_bytes((FIXTURES / "mini.traj.json").read_bytes())
    scenario = tmp_path / "wide.toml"
    scenario.write_text('extends = "transcript"\n[gate]\nlead = -190000\n')  # the gate above the 200k budget
    code, out, err = cli("replay-dir", folder, "--scenario", scenario, "--policies", "naive,slack-gated",
                         "--grid", "slack-gated:gate.lead=0,1000")
    assert code == 0, err
    assert [line.split(",")[2:4] for line in out.splitlines()[1:]] == [["naive", ""], ["slack-gated", "0"],
                                                                       ["slack-gated", "1000"]]
    code, out, err = cli("replay-dir", folder, "--scenario", scenario, "--policies", "naive,slack-gated")
    assert code == 2 and not out and err.count("\n") == 1 and "gate.lead: -190000" in err


def test_a_grid_point_refused_for_a_value_given_with_set_says_so(tmp_path):
    """The gate is wrong because of --set trigger=18000, at every point of a grid over an unrelated parameter:
    the line named the first grid point alone, as if its margin were at fault."""
    code, out, err = cli("sweep", "reentrancy-60", "--policies", "slack-gated", "--set", "trigger=18000", "--grid",
                         "gate.margin_factor=1,2", "--seeds", "0:2", "--out", tmp_path / "s")
    assert code == 2 and not out and err.count("\n") == 1
    assert err.startswith("prunesim: error: --grid point gate.margin_factor=1 (with --set): gate.lead: -16000")
    assert not (tmp_path / "s").exists()


POLICY_FILE = '''
from dataclasses import dataclass

from prunesim.errors import UserError
from prunesim.policies import Policy


@dataclass
class Limit:
    cap: int = 1000

    def check(self, key, where, scenario):
        if self.cap > scenario.budget:
            raise UserError(where, f"{key}.cap", f"{self.cap} is above the budget {scenario.budget}")


@dataclass
class Knob:
    level: int = 3


class Capped(Policy):
    name = "capped"
    summary = "never prunes; reads [limit]"
    tables = {"limit": Limit}

    def decide(self, view):
        return []


class Knobbed(Policy):
    name = "knobbed"
    summary = "never prunes; reads [knob], which has no check"
    tables = {"knob": Knob}

    def decide(self, view):
        return []
'''


def test_a_grid_point_is_checked_with_the_default_of_a_table_the_scenario_does_not_set(tmp_path):
    """A policy from a file whose table's default (cap 1,000) is wrong at the grid point budget=900: the sweep
    planned it unchecked (the scenario had no such table), then its first run refused it naming no flag."""
    (tmp_path / "capped.py").write_text(POLICY_FILE)
    code, out, err = cli("sweep", "oscillation-40", "--policies", f"{tmp_path / 'capped.py'}:Capped", "--grid",
                         "budget=900,950", "--set", "trigger=800", "--seeds", "0:2", "--out", tmp_path / "s")
    assert code == 2 and not out and err.count("\n") == 1, err
    assert err == "prunesim: error: --grid point budget=900 (with --set): limit.cap: 1000 is above the budget 900\n"
    assert not (tmp_path / "s").exists()


def test_a_policy_table_with_no_check_method_is_one_line_not_a_crash(tmp_path):
    (tmp_path / "knobbed.py").write_text(POLICY_FILE)
    code, out, err = cli("run", "oscillation-40", "--policy", f"{tmp_path / 'knobbed.py'}:Knobbed")
    assert code == 2 and not out
    assert err == ("prunesim: error: policy 'knobbed': [knob]: declares a table with no check(key, where, "
                   "scenario) method\n")


def test_writing_a_run_that_kept_nothing_is_refused_not_written_with_an_empty_ledger(tmp_path):
    """api.run(..., trace="none") keeps no ledger, events or calls: api.write wrote them as empty files beside a
    summary that counts passes (a replay, which always kept everything before, now keeps what it is asked)."""
    import pytest
    from prunesim import api

    quiet = api.run(workload=FIXTURES / "mini.traj.json", policy="naive", trace="none",
                    overrides={"budget": 60, "trigger": 40})
    assert quiet.summary["passes"] > 0
    with pytest.raises(ValueError, match="kept no ledger, events or calls"):
        api.write(quiet, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    kept = api.run(workload=FIXTURES / "mini.traj.json", policy="naive", trace="turns",
                   overrides={"budget": 60, "trigger": 40})
    api.write(kept, tmp_path / "out")
    assert (tmp_path / "out" / "ledger.csv").read_text().count("\n") == 1 + kept.summary["passes"]


def test_a_replays_variant_is_checked_for_the_policy_it_runs_under(tmp_path):
    """seed-000's "naive @20k" variant sets trigger=20000: on a base whose own policy is slack-gated (its gate
    then above the budget) the variant, which runs naive, was refused for slack-gated's table."""
    from prunesim.io import scenario_files as sc
    from prunesim.studies.replay import OSCILLATION

    scenario = tmp_path / "gated.toml"
    scenario.write_text('extends = "reentrancy-60"\npolicy = "slack-gated"\n')
    _, runs = OSCILLATION.run_variants([0], base=sc.load(str(scenario)))
    assert runs["naive @20k"][0]["acting_trigger"] == 20000 and runs["slack-gated"][0]["turns"] == 60


def test_api_write_of_a_streamed_run_is_refused_and_writes_nothing(tmp_path):
    # Its recorder kept no rows (they went to the streamed folder): writing it again was a TypeError.
    import pytest
    from prunesim import api
    from prunesim.io import scenario_files
    from prunesim.io.stream import stream_run

    streamed, _ = stream_run(scenario_files.load("oscillation-40", {"turns": 50}), "naive", 0, tmp_path / "s", "all")
    assert (tmp_path / "s" / "trace.csv").read_text().count("\n") > 1
    with pytest.raises(ValueError, match="written as it went"):
        api.write(streamed, tmp_path / "again")
    assert not (tmp_path / "again").exists()
