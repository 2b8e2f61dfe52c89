"""The long-session scenario, its workload's repeats, and the long-session replay's figures."""

import copy

import numpy as np
import pytest
from prunesim.cli import main
from prunesim.io import scenario_files as scenario_mod
from prunesim.model.workload import SyntheticToolLoop
from prunesim.runner import run_one
from prunesim.studies.long_session import LONG_SESSION, LongSessionObserver


def short_session(turns=400):
    """long-session-2000 cut down: fewer turns, a window that fills within them."""
    sc = copy.deepcopy(scenario_mod.load("long-session-2000"))
    sc.turns = turns
    sc.window, sc.budget, sc.trigger = 80_000, 60_000, 50_000
    sc.gate.lead, sc.gate.low_water_gap, sc.recency.low_water_gap = 2_000, 8_000, 10_000
    sc.decision.reclaim_target = 10_000
    sc.workload.events = [e for e in sc.workload.events if e.turn <= turns]
    sc.check("test")
    return sc


def test_the_workload_repeats_commands_at_the_measured_rate():
    sc = scenario_mod.load("long-session-2000")
    p = sc.workload
    loop = SyntheticToolLoop(p, 20_000, 1.5, 0.6, np.random.default_rng(5))
    seen, repeats, lengths = set(), 0, set()
    for plan in loop:
        key = plan.tool_output.key
        repeats += key in seen
        seen.add(key)
        lengths.add(len(key))
        assert plan.tool_call.key == key
    assert lengths == {p.key_chars}
    # a repeat of a turn that was itself a repeat names a key already repeated: the rate is a little under
    assert 0.8 * p.repeat_rate < repeats / 20_000 <= p.repeat_rate * 1.05


def test_the_replay_figures_agree_with_the_runs_summaries():
    sc = short_session()
    for policy in ("naive", "tombstoned", "recency"):
        obs = LongSessionObserver(sc.need.horizon, sc.turns)
        s = run_one(sc, policy, 1, trace="none", observers=(obs,)).summary
        f = obs.figures(s)
        assert f["re_retrievals_per_100_turns"] == pytest.approx(100 * s["re_retrievals"] / sc.turns)
        assert f["overrides_per_100_turns"] == pytest.approx(100 * s["override_retrievals"] / sc.turns)
        assert f["prune_events"] == s["passes"] + s["non_model_evictions"] > 0
        assert f[f"tombstone_tokens@{sc.turns}"] == s["tombstone_tokens"]
        assert f[f"digest_tokens@{sc.turns}"] == s["digest_tokens"]
        share = f["prunes_followed_by_reread_2min"]
        assert 0 <= share <= 1
        if s["re_retrievals"] + s["override_retrievals"] == 0:
            assert share == 0


def test_replay_long_session_reports_every_variant(capsys):
    report = LONG_SESSION.run([0], base=short_session(300))
    text = LONG_SESSION.format_report(report)
    for v in LONG_SESSION.variants:
        assert v.label in report.variants and v.label in text
    assert report.variants["tombstoned"]["tombstone_folds"] > 0
    assert report.variants["tombstoned (no budget)"]["tombstone_folds"] == 0
    assert main(["replay", "long-session", "--seeds", "x"]) == 2
