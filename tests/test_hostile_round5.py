"""Defects found attacking anchored sizes, the kept-warm prefix and the compiled kernel, each pinned by a test."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from prunesim.cli import main
from prunesim.io.scenario_files import load
from prunesim.kernel.choice import MAX_RECORD_BYTES, kernel_gap, pick, record_bytes
from prunesim.model.scenario import Latency, Pricing
from prunesim.model.spans import Span
from prunesim.observe.metrics.cost import CALL_COLUMNS, CostMetrics

READ = CALL_COLUMNS.index("cache_read")


def _observer(spans: list[int]) -> CostMetrics:
    """A cost observer on an explicit cache (no minimum length) whose window holds spans of these sizes."""
    pricing = Pricing(min_tokens=0, lookback=0)
    observer = CostMetrics(SimpleNamespace(scenario=SimpleNamespace(pricing=pricing), trace="all"))
    for i, tokens in enumerate(spans):
        observer.on_span_appended(0.0, 0, Span(i, "user", tokens, 0), tokens, 0, 0, 0)
    return observer


def test_a_recorded_cache_break_past_a_pruned_prompt_leaves_no_entry_longer_than_the_prompt():
    """A policy's replay sends a shorter prompt than the recording: a cache break the runtime recorded at a read
    of 1,500 tokens comes at a prompt of 1,000. The cache must not hold a 1,500-token entry, which the next call,
    its prompt grown to 2,000 by content appended after the break, would read as if that content were cached."""
    observer = _observer([400, 600])
    observer.on_model_call(0.0, 1, 1000, 10, False)
    observer.on_runtime_rewrite(1.0, 2, 1500)
    assert all(e.length <= 1000 for e in observer.cache.entries)
    observer.on_model_call(1.0, 2, 1000, 10, False)
    observer.on_span_appended(2.0, 2, Span(9, "tool_output", 1000, 2), 1000, 0, 0, 0)
    observer.on_model_call(2.0, 3, 2000, 10, False)
    read = observer.calls[-1][READ]
    assert read == 1000  # what the calls before it held, not the recorded 1,500


def test_a_warm_cache_above_the_first_prompt_warms_that_prompt_and_no_more():
    """A workload file whose warm_cache exceeds the first call's prompt (hand-edited): the warm and the kept
    entries end at the prompt's end, so a later, longer prompt does not read content that came after."""
    observer = _observer([400, 600])
    observer.on_cache_warmed(0.0, 1, 5000)
    assert all(e.length <= 1000 for e in observer.cache.entries) and observer.cache._kept[0] <= 1000
    observer.on_model_call(0.0, 1, 1000, 10, False)
    observer.on_span_appended(1.0, 1, Span(9, "tool_output", 5000, 1), 5000, 0, 0, 0)
    observer.on_model_call(1000.0, 2, 6000, 10, False)  # past the TTL: only the kept prefix is live
    assert observer.calls[-1][READ] == 1000



def test_a_run_too_long_for_the_kernels_whole_record_runs_on_simpy_or_is_refused_in_one_line(tmp_path, capsys):
    """The kernel allocates a run's whole record (about 5 kB a turn) where the SimPy engine streams it: 1.5
    million turns would take 7 GiB a run. ``auto`` keeps such a run on SimPy; ``--engine kernel`` refuses it
    before anything runs or is written."""
    base = load("oscillation-40")
    long = dataclasses.replace(base, turns=1_500_000)
    assert record_bytes(long) > MAX_RECORD_BYTES >= record_bytes(base)
    assert "runs of 1,500,000 turns" in kernel_gap(long, "naive")
    assert "runs of" not in kernel_gap(dataclasses.replace(base, turns=100_000), "naive")
    assert pick("auto", [(long, "naive")], 10**9) == "simpy"
    scenario = tmp_path / "long.toml"
    scenario.write_text('extends = "oscillation-40"\nturns = 1500000\n')
    out = tmp_path / "calibration"
    assert main(["calibrate", str(scenario), "--targets", "seed-000", "--params", "decision.select_mean=1:4",
                 "--seeds", "0:2", "--out", str(out), "--engine", "kernel"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--engine: the kernel does not cover runs of 1,500,000 turns" in err
    assert not out.exists()


def test_calibrating_a_parameter_the_kernel_does_not_cover_on_the_kernel_stops_in_one_line(tmp_path, capsys):
    """A fitted need rate takes the candidates out of what the kernel covers. Its refusal used to be taken for
    an infeasible candidate: every candidate scored 1e12, and the calibration wrote a fit of nan figures and
    exited 0. It is the user's choice of engine: one line, exit 2, nothing written."""
    pytest.importorskip("numba", reason="the kernel is the optional extra prunesim[kernel]")
    out = tmp_path / "fit"
    assert main(["calibrate", "oscillation-40", "--targets", "seed-000", "--params", "need.relevant=0:0.1",
                 "--seeds", "0:2", "--max-evals", "4", "--out", str(out), "--engine", "kernel", "--quiet"]) == 2
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.startswith("prunesim: error")]
    assert lines == ["prunesim: error: --engine: the kernel does not cover [need] (the agent's needs) (naive @22k): "
                     "use --engine simpy or auto"]
    assert not out.exists() and "written" not in captured.out


def test_without_numba_kernel_is_refused_in_one_line_and_auto_runs_simpy_saying_why(monkeypatch, capsys):
    """An install without the prunesim[kernel] extra (numba made unimportable here)."""
    assert main(["replay", "oscillation", "--seeds", "0:2", "--json"]) == 0
    simpy = capsys.readouterr().out
    monkeypatch.setitem(sys.modules, "numba", None)
    assert main(["replay", "oscillation", "--seeds", "0:2", "--json", "--engine", "kernel"]) == 2
    refused = capsys.readouterr()
    assert refused.out == "" and refused.err.strip().count("\n") == 0
    assert "--engine: the kernel does not cover this install: numba is not installed" in refused.err
    assert main(["replay", "oscillation", "--seeds", "0:2", "--json", "--engine", "auto"]) == 0
    auto = capsys.readouterr()
    assert auto.out == simpy and "simpy for naive @22k: this install: numba is not installed" in auto.err


EXTREMES = {  # settings the random scenarios of kernel.differential seldom or never draw
    "a window of 300 tokens": {"window": 300, "budget": 300, "trigger": 200},
    "budget == window, hard": {"budget_kind": "hard", "same": True},
    "a huge window": {"window": 10**9, "budget": 10**9 - 1, "trigger": 10**8},
    "trigger 0": {"trigger": 0},
    "no latency": {"latency": Latency(0.0, 0.0, 0.0, 0.0, 0.0)},
    "granularity 1, no minimum, one breakpoint": {"pricing": {"granularity": 1, "min_tokens": 0, "breakpoints": 1,
                                                              "lookback": 1}},
}


def _extreme(scenario, change: dict):
    change = dict(change)
    if change.pop("same", False):
        change["window"] = scenario.budget
    if "pricing" in change:
        change["pricing"] = dataclasses.replace(scenario.pricing, **change["pricing"])
    out = dataclasses.replace(scenario, **change)
    out = dataclasses.replace(out, trigger=min(out.trigger, out.budget))
    # slack-gated refuses a gate outside 0..budget (run_one and the kernel check the tables a policy reads)
    gate = out.tables["gate"]
    lead = min(max(gate.lead, out.trigger - out.budget), out.trigger)
    return dataclasses.replace(out, tables={**out.tables, "gate": dataclasses.replace(gate, lead=lead)})


@pytest.mark.parametrize("name", list(EXTREMES))
def test_extreme_settings_give_the_engines_summary_byte_for_byte_on_one_shared_kernel(name):
    """One kernel for every run, keeping at most one seed's draws: its reuse and forgetting change nothing."""
    pytest.importorskip("numba", reason="the kernel is the optional extra prunesim[kernel]")
    from prunesim.kernel.choice import summary
    from prunesim.kernel.differential import differences, random_scenario, summary_bytes
    from prunesim.kernel.summary import Kernel

    kernel = Kernel(variates_bytes=1, seeds=1)
    rng = np.random.default_rng([5, len(name)])
    runs = []
    for _ in range(3):
        scenario = _extreme(random_scenario(rng), EXTREMES[name])
        scenario.check(name)
        for policy in ("noop", "naive", "recency", "slack-gated"):
            seeds = [4, 1, 4]
            for seed, got in zip(seeds, kernel.summaries(scenario, policy, seeds), strict=True):
                want = summary(scenario, policy, seed, "simpy")
                assert summary_bytes(got) == summary_bytes(want), (name, policy, seed, differences(want, got))
                runs.append(want)
    acted = any(r["passes"] or r["non_model_evictions"] for r in runs)
    assert acted == ("huge" not in name)  # the policies acted, but under a trigger no run reaches
    if "300" in name:
        assert all(r["forced_truncations"] for r in runs)


def test_the_kernel_names_the_callees_it_was_saved_with_so_numba_never_loads_a_stale_loop():
    """numba checks fold.run's cache against fold.py alone: an edit of loop.py (the select_max fix below was one)
    left runs on the loop compiled before it. fold.CALLEES must be the digest of what fold compiles in; while it is
    not, fold's functions compile afresh rather than load a stale cache."""
    pytest.importorskip("numba", reason="the kernel is the optional extra prunesim[kernel]")
    from prunesim.kernel import fold
    assert fold.callees_digest() == fold.CALLEES, (
        f"draws.py or loop.py changed: set fold.CALLEES = {fold.callees_digest()!r} (and so renew fold's cache)")
    assert fold.CACHE


def test_a_huge_select_max_runs_on_the_kernel_as_on_simpy():
    """select_max bounds a pass's selections, it is not their count: the kernel sized a buffer by it and failed
    to allocate 80 GB at select_max = 10**10, where the SimPy engine selects among the candidates there are."""
    pytest.importorskip("numba", reason="the kernel is the optional extra prunesim[kernel]")
    from prunesim.kernel.choice import summary
    from prunesim.kernel.differential import summary_bytes

    base = load("oscillation-40")
    scenario = dataclasses.replace(base, decision=dataclasses.replace(base.decision, select_max=10**10))
    scenario.check("select_max")
    for policy in ("naive", "slack-gated"):
        want = summary(scenario, policy, 0, "simpy")
        assert want["passes"] and summary_bytes(summary(scenario, policy, 0, "kernel")) == summary_bytes(want)


def test_fidelity_refuses_a_set_its_replay_identity_would_ignore(capsys):
    """The replay identity replays both sizes, each at the model's fitted reuse: --set replay.sizes (or
    pricing.reuse, pricing.model) changed nothing in the report, without a word. Now one line, exit 2."""
    folder = str(Path(__file__).parent / "fixtures" / "claude-code")
    for key, value in (("replay.sizes", "calibrated"), ("pricing.reuse", "0.5"), ("pricing.model", "claude-opus-4-5")):
        assert main(["fidelity", folder, "--set", f"{key}={value}", "--json"]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.strip() == f"prunesim: error: --set: {key}: the replay identity sets it per run " \
                                       "(both sizes, each model's fitted reuse)"


def test_auto_says_when_a_variant_chosen_for_the_kernel_runs_candidates_on_simpy():
    """The engine line comes before the runs; a calibration's candidate with a need rate then ran on SimPy
    while that line still said the kernel ran the variant. It is now said, once per variant."""
    pytest.importorskip("numba", reason="the kernel is the optional extra prunesim[kernel]")
    from prunesim.kernel.choice import EngineChoice, summary
    from prunesim.model.scenario import NeedParams

    base = load("oscillation-40")
    notes: list[str] = []
    choice = EngineChoice("auto", {"naive": (base, "naive")}, 10**9, note=notes.append)
    assert choice.chosen == {"naive": "kernel"}
    needs = dataclasses.replace(base, need=NeedParams(relevant=0.05))
    for _ in range(2):
        got = choice.summaries("naive", needs, "naive", [0])
    assert got == [summary(needs, "naive", 0, "simpy")]
    assert notes == ["engine: simpy for the candidates of naive the kernel does not cover: [need] (the agent's needs)"]
    choice.summaries("naive", base, "naive", [0])
    assert len(notes) == 1
