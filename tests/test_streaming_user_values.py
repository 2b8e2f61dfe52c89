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
