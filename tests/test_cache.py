"""The prompt-cache model on hand-made sequences, the cost observer, and the split invariant for every policy."""

import dataclasses
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prunesim import policies
from prunesim.io import scenario_files as sc
from prunesim.model.scenario import Pricing
from prunesim.model.spans import Span
from prunesim.observe.cache import PromptCache
from prunesim.observe.metrics.cost import CALL_COLUMNS, CostMetrics
from prunesim.runner import run_one


def explicit(**kw) -> PromptCache:
    args = dict(behaviour="explicit", ttl_s=300.0, min_tokens=0, granularity=1, breakpoints=4, lookback=0, reuse=1.0)
    return PromptCache(**{**args, **kw})


def implicit(**kw) -> PromptCache:
    args = dict(behaviour="implicit", ttl_s=300.0, min_tokens=0, granularity=1, breakpoints=1, lookback=0, reuse=1.0)
    return PromptCache(**{**args, **kw})


def split(s):
    return s.read, s.write, s.uncached


# -- hand-made sequences ---------------------------------------------------------------
@pytest.mark.parametrize("make", [explicit, implicit])
def test_append_only_every_call_reads_the_previous_prompt(make):
    cache = make()
    assert split(cache.call(0, 1000, 1)) == (0, 1000, 0)
    assert split(cache.call(5, 1500, 2)) == (1000, 500, 0)
    assert split(cache.call(9, 2200, 3)) == (1500, 700, 0)
    assert cache.call(12, 2300, 4).invalidated == 0


def test_eviction_in_the_middle_rewrites_from_that_span_on_explicit():
    # Spans A=400, B=300, C=500. Call 1 sees A; call 2 sees A B C; then B is evicted and D=100 appended.
    cache = explicit()
    cache.call(0, 400, 1)
    cache.call(10, 1200, 3)
    cache.edit(offset=400, span_index=1, freed=300, source="pass 1")
    s = cache.call(20, 1000, 3)
    # The entry at 1,200 died with B; the entry call 1 left at 400 is still live: read it, write the rest.
    assert split(s) == (400, 600, 0)
    # Had A and C stayed cached, 400 + 500 would have been read: C's 500 tokens were written again.
    assert (s.invalidated, s.source) == (500, "pass 1")


def test_a_warmed_entry_is_read_by_the_next_call_beyond_the_lookback():
    # The recorded call read the entry warm() puts there, so a mark stood at it, however far back it lies.
    cache = explicit(lookback=2)
    cache.call(0, 1000, 10)
    cache.edit(offset=400, span_index=2, freed=0, source="runtime")
    cache.warm(400, 2, 5)
    assert split(cache.call(10, 1100, 11)) == (400, 700, 0)
    # Without the warm entry the mark at the end of the prompt finds nothing within 2 spans.
    cold = explicit(lookback=2)
    cold.call(0, 1000, 10)
    cold.edit(offset=400, span_index=2, freed=0, source="runtime")
    assert split(cold.call(10, 1100, 11)) == (0, 1100, 0)


def test_eviction_in_the_middle_implicit_keeps_the_blocks_before_it():
    cache = implicit(granularity=100, min_tokens=100)
    cache.call(0, 1250, 3)  # A=450, B=300, C=500
    cache.edit(offset=450, span_index=1, freed=300, source="x")
    s = cache.call(3, 1050, 3)  # D=100 appended
    assert split(s) == (400, 600, 50)  # blocks of 100 below the edit at 450; the last 50 tokens fill no block
    assert s.invalidated == 900 - 400  # A and C (950 tokens) survived: 900 in whole blocks would have been read


def test_several_edits_before_a_call_are_measured_where_the_cached_prefix_now_ends():
    cache = implicit()
    cache.call(0, 10_000, 10)  # ten spans of 1,000; then two more arrive: 12,000 tokens
    cache.edit(offset=2000, span_index=2, freed=1000, source="a")  # the cached prefix now ends at 9,000
    cache.edit(offset=9000, span_index=9, freed=1000, source="b")  # the first span after it: not cached
    s = cache.call(5, 10_000, 10)
    assert s.read == 2000 and s.invalidated == 9000 - 2000 and s.source == "a"


def test_an_edit_past_the_cached_prefix_invalidates_nothing():
    cache = explicit()
    cache.call(0, 1000, 2)
    cache.edit(offset=1000, span_index=2, freed=200)  # a span appended after the call, removed before the next
    s = cache.call(5, 1100, 3)
    assert split(s) == (1000, 100, 0) and s.invalidated == 0


def test_ttl_expiry_in_simulated_time():
    cache = explicit(ttl_s=300.0)
    cache.call(0, 1000, 1)
    assert cache.call(250, 1200, 2).read == 1000  # read at 250: the entry now lives until 550
    assert cache.call(540, 1300, 3).read == 1200
    s = cache.call(841, 1400, 4)  # 301 s after the last use: expired
    assert split(s) == (0, 1400, 0)


def test_an_edit_after_expiry_is_not_blamed_for_the_rewrite():
    cache = explicit(ttl_s=300.0)
    cache.call(0, 1000, 2)
    cache.edit(offset=200, span_index=1, freed=300, source="pass 1")
    s = cache.call(400, 800, 2)
    assert split(s) == (0, 800, 0) and s.invalidated == 0


def test_a_prompt_below_the_minimum_is_not_cached():
    cache = explicit(min_tokens=1024)
    assert split(cache.call(0, 800, 1)) == (0, 0, 800)
    assert split(cache.call(1, 900, 2)) == (0, 0, 900)
    assert split(cache.call(2, 1500, 3)) == (0, 1500, 0)
    assert split(cache.call(3, 1600, 4)) == (1500, 100, 0)
    cache = implicit(min_tokens=1024, granularity=128)
    assert split(cache.call(0, 1000, 1)) == (0, 0, 1000)
    assert split(cache.call(1, 1100, 2)) == (0, 1024, 76)  # 1,000 tokens were seen, but no whole block of them
    assert split(cache.call(2, 1300, 3)) == (1024, 256, 20)


def test_lookback_limits_how_far_back_a_mark_finds_an_entry():
    # One call over 3 spans, then 5 more spans: the end-of-prompt mark is 5 spans past the entry.
    for breakpoints, expected in ((1, 0), (2, 1000)):
        cache = explicit(lookback=2, breakpoints=breakpoints)
        cache.call(0, 1000, 3)
        # With a second breakpoint the runtime also marks the system prompt (what preceded the first call).
        assert cache.call(5, 1600, 8).read == expected


def test_implicit_reuse_bills_a_share_of_the_readable_prefix():
    cache = implicit(reuse=0.75, granularity=1)
    cache.call(0, 4000, 1)
    assert split(cache.call(1, 4400, 2)) == (3000, 1400, 0)


def test_an_external_index_is_a_tail_the_next_call_does_not_read():
    for breakpoints, expected in ((3, 1300), (2, 1000)):
        cache = explicit(breakpoints=breakpoints)
        cache.call(0, 600, 1)
        cache.call(5, 1000, 2)  # a turn's call; then its output arrives: the window holds 1,300 tokens
        cache.call(6, 1450, 4, stable=1300, stable_spans=4)  # a pass's call: 150 index tokens read from a log
        # With a third breakpoint the runtime marked the window's end, so the next call finds it;
        # else it finds the turn call's entry and writes the turn's output again.
        assert cache.call(9, 1400, 5).read == expected


# -- the cost observer: prices ----------------------------------------------------------
def observer(pricing: Pricing) -> CostMetrics:
    return CostMetrics(SimpleNamespace(scenario=SimpleNamespace(pricing=pricing), trace="all"))


def feed(obs: CostMetrics, sizes, prompts_at, outputs):
    """Append spans of ``sizes``; before span i (for i in prompts_at) make a call of the window so far."""
    for i, size in enumerate(sizes):
        if i in prompts_at:
            obs.on_model_call(float(i), i, obs._total, outputs[prompts_at.index(i)], False)
        obs.on_span_appended(float(i), i, Span(i, "user", size, i), size, 0, 0, 0)


def test_price_arithmetic_explicit_anthropic():
    p = Pricing()  # claude-opus-4-5: $5 input, $25 output, $0.50 read, $6.25 5-minute write
    obs = observer(dataclasses.replace(p, min_tokens=1000))
    feed(obs, [1000, 500, 10], [1, 2], [100, 200])
    cost = [row[CALL_COLUMNS.index("cost_usd")] for row in obs.calls]
    # call 1: 1,000 written at 6.25, 100 out at 25; call 2: 1,000 read at 0.50, 500 written, 200 out
    assert cost == [(1000 * 6.25 + 100 * 25) / 1e6, (1000 * 0.5 + 500 * 6.25 + 200 * 25) / 1e6]
    assert cost == [0.00875, 0.008625]
    obs1h = observer(dataclasses.replace(p, min_tokens=1000, ttl="1h"))
    feed(obs1h, [1000, 500, 10], [1], [100])
    assert obs1h.calls[0][CALL_COLUMNS.index("cost_usd")] == (1000 * 10.0 + 100 * 25) / 1e6


def test_price_arithmetic_implicit_gemini():
    table = sc.from_dict({"pricing": {"model": "gemini-3-pro-preview", "reuse": 1.0}}).pricing
    obs = observer(table)  # $2 input (writes too), $0.20 read, $12 output, blocks of 2,048
    feed(obs, [3000, 2000, 10], [1, 2], [300, 50])
    rows = [(r[CALL_COLUMNS.index("cache_read")], r[CALL_COLUMNS.index("cache_write")],
             r[CALL_COLUMNS.index("uncached")], r[CALL_COLUMNS.index("cost_usd")]) for r in obs.calls]
    # call 1: 3,000 tokens, one block of 2,048 written (at the input price), 952 uncached
    assert rows[0] == (0, 2048, 952, (3000 * 2.0 + 300 * 12) / 1e6)
    # call 2: 5,000 tokens; the 2,048 cached block read, another block written, 904 uncached
    assert rows[1] == (2048, 2048, 904, pytest.approx((2048 * 0.2 + 2952 * 2.0 + 50 * 12) / 1e6))
    assert rows[1][3] == 0.0069136


# -- through the engine -------------------------------------------------------------------
def test_summary_and_ledger_add_up():
    scenario = sc.load("oscillation-40")
    result = run_one(scenario, "naive", 5)
    m = result.summary
    assert m["cache_read_tokens"] + m["cache_write_tokens"] + m["uncached_input_tokens"] == m["input_tokens_billed"]
    calls = result.calls
    assert len(calls) == 40 + m["passes"]  # one call per turn and one per pass
    assert sum(r[CALL_COLUMNS.index("cost_usd")] for r in calls) == pytest.approx(m["cost_usd"], abs=1e-6)
    ledger = result.ledger
    # The observer numbers decision calls in order; the engine makes exactly one per pass, so they are its pass ids.
    assert [r[CALL_COLUMNS.index("pass")] for r in calls if r[CALL_COLUMNS.index("decision")]] == [r[0] for r in ledger]
    decision = sum(r[17] for r in ledger)
    assert decision == pytest.approx(m["decision_cost_usd"], abs=1e-6)
    assert sum(r[18] for r in ledger) <= m["invalidated_tokens"]
    assert m["invalidated_tokens"] > 0 and m["cache_invalidations"] > 0  # naive evicts mid-window
    for r in ledger:
        assert r[20] == pytest.approx(r[17] + r[19], abs=1e-8)  # pass cost = own call + forced rewrite
        assert r[21] == -1 or r[21] >= r[1]  # break-even turn: never, or not before the pass


def test_noop_never_invalidates_and_reads_almost_everything():
    m = run_one(sc.load("oscillation-40"), "noop", 2).summary
    assert m["cache_invalidations"] == 0 and m["invalidated_tokens"] == 0 and m["invalidation_cost_usd"] == 0
    assert m["cache_read_tokens"] > 0.9 * m["input_tokens_billed"]


def test_a_runtime_forced_drop_is_billed_but_not_blamed_on_the_policy():
    obs = observer(dataclasses.replace(Pricing(), min_tokens=0))
    feed(obs, [500, 500, 500], [2], [10])
    obs.on_span_removed(3.0, 3, "forced_drop", Span(0, "user", 500, 0), 500, 0, 0, 0)
    obs.on_model_call(4.0, 4, obs._total, 10, False)
    assert obs.calls[-1][CALL_COLUMNS.index("cache_write")] == 1000  # everything rewritten
    assert obs.invalidated == 0 and obs.invalidations == 0


# -- the split invariant, for every policy --------------------------------------------
POLICIES = sorted(policies.REGISTRY)
BASE = sc.load("oscillation-40").to_dict()


@st.composite
def priced_scenarios(draw):
    model = draw(st.sampled_from(["claude-opus-4-5", "gemini-3-pro-preview", "gpt-5-codex"]))
    cache = draw(st.sampled_from(["explicit", "implicit", "none"]))
    overrides = {
        "turns": draw(st.integers(1, 60)),
        "trigger": draw(st.integers(12_000, 24_000)),
        "budget_kind": draw(st.sampled_from(["hard", "soft"])),
        "workload.tool_output.mean": draw(st.floats(50, 2500)),
        "decision.concurrent": draw(st.booleans()),
        "pricing.model": model,
        "pricing.cache": cache,
        "pricing.ttl": "5m" if cache == "explicit" else draw(st.sampled_from(["5m", "1h", "20s"])),
        "pricing.min_tokens": draw(st.integers(0, 8000)),
        "pricing.granularity": draw(st.sampled_from([1, 128, 2048])),
        "pricing.breakpoints": draw(st.integers(1, 4)),
        "pricing.lookback": draw(st.integers(0, 25)),
        "pricing.reuse": draw(st.floats(0, 1)),
        "latency.model_base_s": draw(st.sampled_from([0.4, 30.0])),  # slow calls make TTLs expire
    }
    return sc.from_dict(sc.apply_overrides(BASE, overrides), "<hypothesis>")


@settings(max_examples=40, deadline=None)
@given(priced_scenarios(), st.sampled_from(POLICIES), st.integers(0, 2**32 - 1))
def test_read_write_uncached_is_the_prompt_of_every_call(scenario, policy, seed):
    result = run_one(scenario, policy, seed)
    col = {c: i for i, c in enumerate(CALL_COLUMNS)}
    for row in result.calls:
        read, write, uncached = row[col["cache_read"]], row[col["cache_write"]], row[col["uncached"]]
        assert min(read, write, uncached) >= 0
        assert read + write + uncached == row[col["prompt_tokens"]]
        assert 0 <= row[col["invalidated_tokens"]] <= write
    m = result.summary
    assert m["cache_read_tokens"] + m["cache_write_tokens"] + m["uncached_input_tokens"] == m["input_tokens_billed"]
    assert m["cost_usd"] >= m["decision_cost_usd"] >= 0


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_on_the_shipped_scenarios(policy):
    for name, overrides in (("oscillation-40", {}), ("reentrancy-60", {}),
                            ("oscillation-40", {"decision.concurrent": True, "pricing.model": "gemini-3-pro-preview"})):
        result = run_one(sc.replace(sc.load(name), overrides), policy)
        for row in result.calls:
            assert sum(row[6:9]) == row[5]
        # a decision call is a prune pass's (numbered as the ledger's) or a compaction's (pass 0)
        decisions = [r[4] for r in result.calls if r[3] and r[4]]
        assert decisions == [r[0] for r in result.ledger]
        assert sum(1 for r in result.calls if r[3] and not r[4]) == result.summary["compactions"]
