"""A user's policy may answer unusual values: a streamed run still writes what a recorded run writes."""

import textwrap
from pathlib import Path

import pytest
from prunesim.io.results import write_run
from prunesim.io.stream import stream_run
from prunesim.runner import run_one

POLICY_HEADER = '''
import numpy as np
from prunesim.policies import Policy
from prunesim.policies.base import Clear, Evict, Summarize, Truncate, Warn


def old_outputs(view):
    return [s.id for s in view.spans if s.kind == "tool_output" and s.offerable][:-2]


class Hostile(Policy):
    name = "hostile"

    def decide(self, view):
        if view.utilization < self.scenario.trigger:
            return []
        return ACTIONS(view)
'''


def policy_file(tmp_path: Path, actions: str) -> str:
    path = tmp_path / "hostile_policy.py"
    path.write_text(POLICY_HEADER + "\n\ndef ACTIONS(view):\n" + textwrap.indent(textwrap.dedent(actions), "    "))
    return f"{path}:Hostile"


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def assert_streamed_equals_recorded(tmp_path, scenario, policy, mode):
    recorded, streamed = tmp_path / f"r-{mode}", tmp_path / f"s-{mode}"
    write_run(run_one(scenario, policy, 3, trace=mode), recorded)
    stream_run(scenario, policy, 3, streamed, mode)
    assert files_of(streamed) == files_of(recorded)


REASONS = {
    "quote_comma_newline": 'say "hi", then\nbye',
    "comma": "a,b",
    "non_ascii": "élagué ✂ 剪枝",
    "control": "a\x00b\x07c\rd\te",
    "empty": "",
    "long": "r" * 20000,
}


@pytest.mark.parametrize("mode", ["all", "turns"])
@pytest.mark.parametrize("reason", sorted(REASONS))
def test_a_reason_of_any_text_is_written_alike(tmp_path, oscillation, reason, mode):
    # The trace's cause of a non-model eviction carries the reason: a comma or a quote in it must be quoted.
    policy = policy_file(tmp_path, f"old = old_outputs(view)\nreturn [Evict(tuple(old), reason={REASONS[reason]!r})]"
                                   " if old else []\n")
    assert_streamed_equals_recorded(tmp_path, oscillation, policy, mode)
    if mode == "all" and reason == "quote_comma_newline":
        import csv

        with open(tmp_path / "s-all" / "trace.csv", newline="") as f:
            events = {row["event"] for row in csv.DictReader(f)}
        assert 'nonmodel_say "hi", then\nbye' in events
    if mode == "all" and reason == "control":
        import pandas as pd

        # A lone carriage return in the reason is quoted: a reader does not take it for the end of a row.
        frame = pd.read_csv(tmp_path / "s-all" / "trace.csv", dtype=str, keep_default_na=False)
        assert set(frame["event"][frame["event"].str.startswith("nonmodel")]) == {"nonmodel_" + REASONS[reason]}


NUMPY_ACTIONS = {
    "evict_ids": "return [Evict(tuple(np.int64(i) for i in old_outputs(view)), reason='np')]\n",
    "truncate": "return [Truncate(np.int64(i), np.int32(50)) for i in old_outputs(view)]\n",
    "summarize": "old = old_outputs(view)\nreturn [Summarize(tuple(old), np.int16(40))] if old else []\n",
    "warn_and_bool": "return [Warn(np.uint8(3), reason='w,\"q\"'), Truncate(old_outputs(view)[0], True)]"
                     " if old_outputs(view) else []\n",
    "clear": "old = old_outputs(view)\nreturn [Clear(tuple(old), tuple(np.int64(3) for _ in old))] if old else []\n",
    "huge_and_empty": "old = old_outputs(view)\nreturn [Evict(()), Summarize((), 0), Summarize(tuple(old), 10**30)]\n",
}


@pytest.mark.parametrize("mode", ["all", "turns"])
@pytest.mark.parametrize("actions", sorted(NUMPY_ACTIONS))
def test_numpy_and_other_integers_are_written_as_ints(tmp_path, oscillation, actions, mode):
    policy = policy_file(tmp_path, NUMPY_ACTIONS[actions])
    assert_streamed_equals_recorded(tmp_path, oscillation, policy, mode)
    import csv
    import json

    with open(tmp_path / f"s-{mode}" / "events.csv", newline="") as f:
        details = [json.loads(row["detail"]) for row in csv.DictReader(f)]
    assert details  # every detail is JSON, its integers written as integers
    for detail in details:
        assert all(type(v) is not float for k, v in detail.items() if k in ("tokens", "freed", "spans", "written"))


@pytest.mark.parametrize("value", ["50.5", "np.float64(50.0)", "'50'", "None"])
def test_a_token_count_that_is_not_an_integer_is_one_line_and_writes_nothing(tmp_path, capsys, value):
    from prunesim.cli import main

    policy = policy_file(tmp_path, f"return [Truncate(i, {value}) for i in old_outputs(view)]\n")
    out = tmp_path / "out"
    assert main(["run", "oscillation-40", "--policy", policy, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "keep_tokens=" in err and "not an integer" in err and "--policy" in err
    assert not out.exists() and list(tmp_path.iterdir()) == [tmp_path / "hostile_policy.py"]


def test_a_run_without_latency_writes_its_times_as_a_recorded_run_does(tmp_path):
    # The clock starts at the integer 0 and stays at 0.0 (a float) when no call takes time: both are
    # written as write_run writes them, "0" then "0.0".
    from prunesim.io import scenario_files

    scenario = scenario_files.load("oscillation-40", {"latency.model_base_s": 0, "latency.model_per_input_token_s": 0,
                                                      "latency.model_per_output_token_s": 0,
                                                      "latency.tool_mean_s": 0, "latency.tool_sigma": 0})
    for policy in ("slack-gated", "recency"):
        for mode in ("all", "turns"):
            assert_streamed_equals_recorded(tmp_path / policy, scenario, policy, mode)
    times = {line.split(",")[1] for line in (tmp_path / "recency" / "s-all" / "trace.csv").read_text().splitlines()[1:]}
    assert times == {"0", "0.0"}


@pytest.mark.parametrize(("actions", "field"), [
    ("return [Truncate(i, -5) for i in old_outputs(view)]\n", "keep_tokens="),
    ("old = old_outputs(view)\nreturn [Summarize(tuple(old), np.int64(-40))] if old else []\n", "summary_tokens="),
    ("old = old_outputs(view)\nreturn [Clear(tuple(old), tuple(-1 for _ in old))] if old else []\n",
     "placeholder_tokens="),
    ("return [Warn(-3)]\n", "tokens="),
])
def test_a_negative_token_count_is_one_line_and_writes_nothing(tmp_path, capsys, actions, field):
    from prunesim.cli import main

    policy = policy_file(tmp_path, actions)
    out = tmp_path / "out"
    assert main(["run", "oscillation-40", "--policy", policy, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and field in err and "negative" in err and "--policy" in err
    assert not out.exists() and list(tmp_path.iterdir()) == [tmp_path / "hostile_policy.py"]
