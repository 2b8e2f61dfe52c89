"""Round four of hostile input, on the surfaces merged since round three (the recorded-runtime replay, the
reaction loop, fidelity's replay identity, the new policy settings and workload fields): each defect found is
one line and exit 2, never a crash report, never a silently ignored request."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_capture import cli

FIXTURES = Path(__file__).resolve().parent / "fixtures"
HUGE = "1" + "0" * 400  # an integer no float can hold


def _one_line_usage_error(code: int, err: str, *names: str) -> None:
    assert code == 2, err
    lines = [line for line in err.splitlines() if "warning" not in line]
    assert len(lines) == 1 and "Traceback" not in err, err
    for name in names:
        assert name in lines[0], err


@pytest.mark.parametrize("key", ["clear_tool_uses.chars_per_token", "latency.tool_mean_s", "need.relevant"])
def test_an_integer_too_large_for_a_float_in_a_float_setting_is_one_line(key):
    code, _, err = cli("run", "oscillation-40", "--policy", "clear-tool-uses", "--set", f"{key}={HUGE}")
    _one_line_usage_error(code, err, key, "out of range")


def test_fidelity_refuses_set_turns_as_every_other_replay_does(tmp_path):
    workload = tmp_path / "w.workload.jsonl"
    assert cli("import", FIXTURES / "mini.traj.json", "--out", workload)[0] == 0
    code, out, err = cli("fidelity", workload, "--set", "turns=3")
    _one_line_usage_error(code, err, "--set", "turns")
    assert out == ""


def _workload(tmp_path, **header) -> Path:
    """The fixture transcript imported, with these header fields changed."""
    import json

    path = tmp_path / "w.workload.jsonl"
    assert cli("import", FIXTURES / "mini.traj.json", "--out", path)[0] == 0
    lines = path.read_text().splitlines()
    head = json.loads(lines[0])
    head.update(header)
    changed = tmp_path / "changed.jsonl"
    changed.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    return changed


@pytest.mark.parametrize("event", [{"event": "cache_break", "turn": 999, "at_tokens": 5},
                                   {"event": "cache_break", "turn": 0, "at_tokens": 5},
                                   {"event": "compaction", "turn": 999}])
def test_a_workload_event_outside_its_calls_is_refused_not_dropped(tmp_path, event):
    path = _workload(tmp_path, events=[event])
    code, _, err = cli("run", "--workload", path)
    _one_line_usage_error(code, err, str(path), "events", "from 1 to the header's turns")


def test_a_recorded_runtime_problem_names_the_file_the_user_gave(tmp_path):
    path = _workload(tmp_path, model="no-such-model")
    code, _, err = cli("run", "--workload", path)
    _one_line_usage_error(code, err, f"{path} (", "no-such-model", "prices.toml")


LOUD = '''import warnings
from prunesim.policies import Policy


class Loud(Policy):
    name = "loud"

    def decide(self, view):
        warnings.warn("first line\\nsecond line", stacklevel=1)
        return []
'''


def test_a_python_warning_raised_under_a_command_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loud.py").write_text(LOUD)
    code, _, err = cli("run", "oscillation-40", "--policy", "loud.py:Loud")
    assert code == 0, err
    assert err.splitlines() == ["prunesim: warning: first line"], err


def test_sensitivity_with_few_points_prints_no_library_warning(tmp_path):
    code, _, err = cli("sensitivity", "oscillation", "--samples", "2", "--seeds", "0:1", "--quiet",
                       "--params", "decision.rationale_per_span", "--out", tmp_path / "s.csv")
    assert code == 0, err
    assert err == "", err


ACTS = '''from prunesim.policies import Policy
from prunesim.policies.base import *  # noqa: F403


class Acts(Policy):
    name = "acts"

    def decide(self, view):
        if view.turn < 3 or not view.spans:
            return []
        last = view.spans[-1].id
        return [{action}]
'''


@pytest.mark.parametrize("action, field", [
    ("Restore(None)", "span_ids"),  # the newest action, once left out of the contract's check
    ("Restore(True)", "span_ids"),
    ("Restore((-1,))", "span_ids"),
    ("Evict((last,), reason=object())", "reason"),  # not a string: the events' JSON could not hold it
    ("Evict((last,), reason={1, 2})", "reason"),
    ("Evict((last,), fallback='yes')", "fallback"),
    ("ModelPass((last,), 10, 10, (5,), 3, placement='nowhere')", "placement"),  # read as 'log' without a word
])
def test_a_user_policys_action_of_the_wrong_type_is_one_line_naming_the_field(tmp_path, monkeypatch, action, field):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "acts.py").write_text(ACTS.format(action=action))
    code, _, err = cli("run", "oscillation-40", "--policy", "acts.py:Acts", "--out", tmp_path / "run")
    _one_line_usage_error(code, err, "acts.py:Acts", f"with {field}=")
    assert not (tmp_path / "run").exists()


def test_a_numpy_flag_in_a_user_policys_action_is_taken_as_a_flag(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "acts.py").write_text(ACTS.format(action="Evict((last,), fallback=__import__('numpy').bool_(True))"))
    code, _, err = cli("run", "oscillation-40", "--policy", "acts.py:Acts", "--json")
    assert code == 0, err


def test_one_relative_policy_spec_in_two_folders_loads_each_folders_file(tmp_path, monkeypatch):
    """What a call does must not depend on what ran before it in the process: ``acts.py:Acts`` names the file of
    the working folder at the call, not the one an earlier call loaded."""
    answers = {"one": "Restore(None)", "two": "Evict((last,), reason=object())"}
    for folder, action in answers.items():
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "acts.py").write_text(ACTS.format(action=action))
    for folder, field in (("one", "span_ids"), ("two", "reason"), ("one", "span_ids")):
        monkeypatch.chdir(tmp_path / folder)
        code, _, err = cli("run", "oscillation-40", "--policy", "acts.py:Acts")
        _one_line_usage_error(code, err, f"with {field}=")


@pytest.mark.parametrize("kwargs, name", [({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"), ({"seed": "3"}, "seed"),
                                          ({"overrides": [("turns", 3)]}, "overrides"),
                                          ({"overrides": {1: 2}}, "overrides"), ({"trace": "bogus"}, "trace")])
def test_api_run_names_the_argument_a_caller_got_wrong(kwargs, name):
    from prunesim import api
    from prunesim.errors import UserError

    with pytest.raises(UserError) as caught:
        api.run("oscillation-40", policy="noop", **kwargs)
    assert caught.value.key == name


def test_api_run_takes_a_numpy_seed_as_the_same_seed():
    import numpy as np
    from prunesim import api

    assert api.run("oscillation-40", policy="naive", seed=np.int64(3), trace="none").summary == \
        api.run("oscillation-40", policy="naive", seed=3, trace="none").summary


def test_a_400_digit_cell_in_a_sweeps_runs_csv_is_not_a_number_to_aggregate_or_plot(tmp_path):
    import csv

    sweep = tmp_path / "sweep"
    code, _, err = cli("sweep", "oscillation-40", "--grid", "trigger=20000,22000", "--policies", "naive",
                       "--seeds", "0:2", "--out", sweep)
    assert code == 0, err
    rows = list(csv.reader((sweep / "runs.csv").open()))
    rows[1][rows[0].index("passes")] = HUGE
    with (sweep / "runs.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    for argv in (["aggregate", sweep], ["plot", "sweep", sweep, "--metric", "passes", "--out", tmp_path / "s.png"]):
        code, _, err = cli(*argv)
        lines = [line for line in err.splitlines() if "note" not in line]
        assert code == 2 and len(lines) == 1 and "runs.csv: line 2, column passes" in lines[0], err
    assert not (tmp_path / "s.png").exists()


def test_importing_a_workload_file_says_it_is_one_not_an_unknown_format(tmp_path):
    workload = tmp_path / "w.workload.jsonl"
    assert cli("import", FIXTURES / "mini.traj.json", "--out", workload)[0] == 0
    code, _, err = cli("import", workload, "--out", tmp_path / "again.jsonl")
    lines = [line for line in err.splitlines() if line.startswith("prunesim: error")]
    assert code == 2 and len(lines) == 1 and "is a prunesim workload already" in lines[0], err
    assert not (tmp_path / "again.jsonl").exists()


@pytest.mark.parametrize("cell", [HUGE, "abc"])
def test_a_corrupted_cell_of_a_leaderboards_runs_csv_is_named_not_left_out_of_the_figure(tmp_path, cell):
    import csv

    board = tmp_path / "board"
    # A need model: without one re_retrievals (the Pareto plot's y) are unobservable and left out.
    code, _, err = cli("leaderboard", "--scenario", "oscillation-40", "--seeds", "0:3", "--policies", "noop,naive",
                       "--set", "need.relevant=0.05", "--out", board)
    assert code == 0, err
    rows = list(csv.reader((board / "runs.csv").open()))
    rows[2][rows[0].index("cost_ratio")] = cell
    with (board / "runs.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    for kind in (["cdf", board, "--metric", "cost_ratio"], ["pareto", board, "--stat", "mean"]):
        code, _, err = cli("plot", *kind, "--out", tmp_path / "f.png")
        _one_line_usage_error(code, err, "runs.csv: line 3, column cost_ratio", "is not a number")
    assert not (tmp_path / "f.png").exists()
