"""An action's per-span sizes come one per span: any other count is the policy's bug, refused in one line.

A ``ModelPass`` writes ``rationale_per_span[i]`` for ``selected[i]``: with fewer sizes than selections the
selections past them would be neither written nor evicted, without a word; a ``Clear`` leaves
``placeholder_tokens[i]`` for ``span_ids[i]``. Both are refused alike, whatever the two counts.
"""

from __future__ import annotations

import pytest
from cli_capture import cli
from hypothesis import given, settings
from hypothesis import strategies as st
from prunesim import api
from prunesim.model.engine import PolicyContractError
from prunesim.policies import Policy
from prunesim.policies.base import Clear, ModelPass


def _policy(action: str, spans: int, sizes: int) -> type[Policy]:
    class Sized(Policy):
        name = f"sized-{action}-{spans}-{sizes}"
        summary = "answers one action with a chosen number of spans and of sizes"

        def decide(self, view):
            outputs = [s.id for s in view.spans if s.kind == "tool_output" and s.offerable]
            if view.utilization < self.scenario.trigger or len(outputs) < spans:
                return []
            chosen = tuple(outputs[:spans])
            if action == "ModelPass":
                return [ModelPass(chosen, 100, 20, (30,) * sizes, len(outputs))]
            return [Clear(chosen, (5,) * sizes)]

    return Sized


@settings(max_examples=30, deadline=None)
@given(action=st.sampled_from(["ModelPass", "Clear"]), spans=st.integers(1, 4), sizes=st.integers(0, 5))
def test_one_size_per_span_or_a_refusal(action, spans, sizes):
    cls = _policy(action, spans, sizes)
    if sizes == spans:
        result = api.run("oscillation-40", policy=cls, seed=1, overrides={"turns": 25}, trace="none")
        assert result.summary["passes" if action == "ModelPass" else "clearings"] > 0
        return
    with pytest.raises(PolicyContractError) as err:
        api.run("oscillation-40", policy=cls, seed=1, overrides={"turns": 25}, trace="none")
    what = "rationale sizes" if action == "ModelPass" else "placeholder sizes"
    noun = "selections" if action == "ModelPass" else "spans"
    assert f"gave {sizes} {what} for {spans} {noun}" in str(err.value)


FEWER = '''
from prunesim.policies import Policy
from prunesim.policies.base import ModelPass


class Fewer(Policy):
    name = "fewer-sizes"
    summary = "three selections, two rationale sizes"

    def decide(self, view):
        outputs = [s.id for s in view.spans if s.kind == "tool_output" and s.offerable]
        if view.utilization < self.scenario.trigger or len(outputs) < 3:
            return []
        return [ModelPass(tuple(outputs[:3]), 100, 20, (30, 30), len(outputs))]
'''


def test_the_command_line_says_it_in_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text(FEWER)
    code, out, err = cli("run", "oscillation-40", "--policy", "mine.py:Fewer", "--out", tmp_path / "run")
    assert code == 2 and out == "" and not (tmp_path / "run").exists()
    assert err.splitlines() == [err.strip()] and "gave 2 rationale sizes for 3 selections" in err
