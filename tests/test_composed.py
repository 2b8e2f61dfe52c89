"""Composition with '+': parts run in order, each on the window the parts before it leave (policies/composed.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from prunesim.cli import main
from prunesim.errors import UserError
from prunesim.io import scenario_files as sc
from prunesim.io.transcripts.workload import TranscriptWorkload
from prunesim.model.engine import Engine
from prunesim.model.spans import Span
from prunesim.policies import REGISTRY, every_policy, get_policy, parse_names
from prunesim.policies.base import Clear, Compact, Evict
from prunesim.policies.composed import after
from prunesim.runner import run_one
from prunesim.studies.transcript_replay import replay
from runtime_fixtures import policy, tool_turns, view_of, workload

HYBRID = "llm-summary:complexity-trap+observation-masking:complexity-trap"
# Windows on which the runtime policies act within a short replay (the trigger of each is crossed).
ACTING = {"clear_tool_uses.trigger": 20_000, "window": 60_000, "budget": 60_000}


def same_run(a, b) -> None:
    """Two results are the same run: every metric, every trace column, the calls, the events and the edit log."""
    assert a.summary == b.summary
    ta, tb = a.trace(), b.trace()
    assert ta.keys() == tb.keys() and all(np.array_equal(ta[k], tb[k]) for k in ta)
    assert a.calls == b.calls
    assert list(a.events) == list(b.events)
    assert a.edit_log == b.edit_log


@pytest.mark.parametrize("name", every_policy())
def test_a_policy_composed_with_noop_runs_exactly_as_the_policy_alone(name):
    scenario = sc.load("oscillation-40")
    same_run(run_one(scenario, f"{name}+noop", 7), run_one(scenario, name, 7))
    data = workload(40, output=lambda t: 1200 + 37 * (t % 9))
    base = sc.load("transcript", ACTING)
    alone, _ = replay(data, base, name, 3)
    composed, _ = replay(data, base, f"{name}+noop", 3)
    same_run(composed, alone)


NAMES = every_policy()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=st.sampled_from(NAMES), b=st.sampled_from(NAMES), seed=st.integers(0, 50))
def test_any_two_registered_policies_compose_and_run(a, b, seed):
    assume(f"{a}+{b}" not in REGISTRY)  # a registered name wins (test_a_registered_name_with_a_plus_is_not_split)
    cls = get_policy(f"{a}+{b}")
    assert cls.parts == (REGISTRY[a], REGISTRY[b])
    assert set(cls.tables) == set(REGISTRY[a].tables) | set(REGISTRY[b].tables)
    assert set(cls.parameters()) == set(REGISTRY[a].parameters()) | set(REGISTRY[b].parameters())
    scenario = sc.load("oscillation-40", {"turns": 30})
    result = run_one(scenario, f"{a}+{b}", seed)
    assert result.summary["turns"] == 30
    assert result.summary["peak_utilization"] <= scenario.window
    replayed, _ = replay(workload(30, output=lambda t: 1500), sc.load("transcript", ACTING), f"{a}+{b}", seed)
    assert replayed.summary["turns"] == 30


def test_a_registered_name_with_a_plus_is_not_split():
    joined = [name for name in REGISTRY if "+" in name]
    assert joined, "the registry has a built-in whose name holds '+' (slack-gated+tombstoned)"
    for name in joined:
        assert get_policy(name) is REGISTRY[name]
        assert not hasattr(get_policy(name), "parts")


def test_the_hybrid_summarizes_and_masks_the_observations_the_summary_keeps():
    """The Complexity Trap's hybrid in SWE-agent: summarize_every_n_turns, then last_n_observations on what is left."""
    scenario = sc.load("transcript", {"turns": 80})
    engine = Engine(scenario, policy(HYBRID, {"turns": 80}), TranscriptWorkload(workload(80, output=lambda t: 600)))
    engine.run()
    spans = engine.window.spans()
    assert [s.kind for s in spans[:2]] == ["system", "summary"]  # the summaries came at turns 31, 52 and 73
    assert {s.turn for s in spans[2:]} == set(range(64, 81))  # the 10 turns kept then, and 7 since
    assert [s.turn for s in spans if s.kind == "tool_output"] == list(range(71, 81))  # the last 10 outputs whole
    assert [s.turn for s in spans if s.kind == "placeholder"] == list(range(64, 71))  # older kept ones masked
    assert {s.tokens for s in spans if s.kind == "placeholder"} == {9}
    alone = Engine(scenario, policy("llm-summary:complexity-trap", {"turns": 80}),
                   TranscriptWorkload(workload(80, output=lambda t: 600)))
    alone.run()
    assert [s.kind for s in alone.window.spans()].count("summary") == 1
    assert sum(s.kind == "tool_output" for s in alone.window.spans()) == 17  # nothing masked without the second part


def test_the_next_part_sees_the_window_as_the_parts_before_it_leave_it():
    spans = tool_turns([1000, 2000, 3000, 4000])  # ids 1..8: call, output per turn
    view = view_of(spans, turn=4)
    shown = after(view, [Clear((2, 4), (9, 0)), Evict((5,)), Compact((7, 8), 300)])
    assert view.utilization - shown.utilization == (1000 - 9) + 2000 + 20 + (20 + 4000 - 300)
    assert [(s.id, s.kind, s.tokens) for s in shown.spans] == [(1, "tool_call", 20), (2, "placeholder", 9),
                                                              (3, "tool_call", 20), (6, "tool_output", 3000)]
    assert set(shown.by_id) == {1, 2, 3, 6} and shown.unpinned == shown.spans


def test_a_later_part_never_edits_what_an_earlier_part_edited_on_the_same_call():
    spans = tool_turns([900] * 12)
    both = policy("observation-masking:swe-agent+observation-masking:complexity-trap",
                  {"observation_masking.n": 3}).decide(view_of(spans, turn=12))
    first = policy("observation-masking:swe-agent", {"observation_masking.n": 3}).decide(view_of(spans, turn=12))
    assert both == first  # the second part would mask the same outputs: they are the first's already


def test_set_reaches_every_part_that_reads_the_key():
    composite = policy("observation-masking:swe-agent+observation-masking:openhands", {"observation_masking.n": 3})
    assert [m.params.n for m in composite.members] == [3, 3]
    assert [m.params.unit for m in composite.members] == ["observations", "events"]


def test_a_registered_name_with_a_plus_is_that_policy_and_longer_specs_split_around_it():
    assert get_policy("slack-gated+tombstoned") is REGISTRY["slack-gated+tombstoned"]
    assert get_policy("slack-gated+tombstoned+noop").parts == (REGISTRY["slack-gated+tombstoned"], REGISTRY["noop"])
    assert parse_names(f"naive,{HYBRID}") == ["naive", HYBRID]


@pytest.mark.parametrize("spec, words", [
    ("noop+bogus", "part 'bogus' of the composition is not a policy"),
    ("noop++naive", "an empty part in a composition"),
    ("naive+", "an empty part in a composition"),
    ("noop+missing.py:Cls", "part 'missing.py:Cls': no such file 'missing.py'"),
])
def test_a_bad_composition_is_one_line_naming_the_part(spec, words, capsys):
    with pytest.raises(UserError, match="--policy"):
        get_policy(spec)
    assert main(["run", "oscillation-40", "--policy", spec]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert words in line and spec in line


def test_a_users_part_that_names_a_span_not_in_the_window_is_one_line_naming_that_part(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("from prunesim.policies import Policy\nfrom prunesim.policies.base import Evict\n\n"
                   "class Stray(Policy):\n    name = 'stray'\n\n"
                   "    def decide(self, view):\n        return [Evict((10**9,))] if view.turn == 5 else []\n")
    spec = f"recency+{bad}:Stray"
    assert main(["run", "oscillation-40", "--policy", spec, "--seed", "1"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "'stray' (part of" in line and "not in the window (turn 5)" in line and f"{bad}:Stray" in line


def test_a_part_that_answers_no_list_is_named():
    class Wrong(REGISTRY["noop"]):
        name = "wrong"

        def decide(self, view):
            return None

    scenario = sc.load("oscillation-40")
    cls = get_policy("naive+noop")
    obj = cls(scenario, np.random.default_rng(0))
    obj.members[1] = Wrong(scenario, None)
    with pytest.raises(Exception, match="'wrong' \\(part of 'naive\\+noop'\\) returned NoneType"):
        obj.decide(view_of([Span(1, "tool_output", 10, 1)], turn=1))


def test_in_the_hybrid_the_summary_reads_the_turns_unmasked_and_masked_first_it_reads_them_masked():
    """SWE-agent's hybrid passes the unmasked context to the summarizer: the summary part, first, is shown what the
    masking part after it cleared, and the engine restores it just before the summary call reads it."""
    data = workload(80, output=lambda t: 600)
    base = sc.load("transcript")

    def compactions(name):
        result, _ = replay(data, base, name, 0)
        return [(e.turn, e.event, e.detail["prompt"]) for e in result.events if e.event in ("compact", "restore")]

    alone = compactions("llm-summary:complexity-trap")
    hybrid = compactions(HYBRID)
    assert [c for c in hybrid if c[1] == "compact"] == alone  # the same turns, the same prompts: the unmasked window
    assert [c[:2] for c in hybrid] == [(t, kind) for t, _, _ in alone for kind in ("restore", "compact")]
    masked_first = compactions("observation-masking:complexity-trap+llm-summary:complexity-trap")
    assert all(m[2] < a[2] / 2 for m, a in zip(masked_first, alone, strict=True))  # it reads placeholders


@pytest.mark.parametrize(("spec", "seed", "turns"), [("naive+recency", 11, 30), ("tombstoned+slack-gated", 7, 30),
                                                     ("naive+tombstoned", 31, 40)])
def test_a_later_part_never_names_what_the_engine_dropped_to_fit_an_earlier_pass(spec, seed, turns):
    """An earlier part's pass whose index does not fit under the ceiling makes the engine drop the oldest spans
    first (leaving a tombstone each, in a run that keeps a log): the later part is shown the window without them,
    so it never names one (these runs stopped with a broken contract of the composition before)."""
    scenario = sc.load("oscillation-40", {"turns": turns})
    result = run_one(scenario, spec, seed, trace="all")
    assert "forced_drop" in set(result.trace()["event"]), "the case no longer makes the engine drop to fit a pass"
    assert result.summary["turns"] == turns
