"""The prefix other sessions keep warm: the cache model, the cache model fed recorded prompts, and the replay."""

import pytest
from prunesim.io import prices
from prunesim.io import scenario_files as sc
from prunesim.io.transcripts import workload as wl
from prunesim.observe.cache import PromptCache
from prunesim.observe.metrics.cost import CALL_COLUMNS
from prunesim.runner import run_one
from prunesim.studies import cache_fidelity as cf
from prunesim.studies.transcript_replay import replay
from test_cache_fidelity import write_claude_reads

READ, WRITE = CALL_COLUMNS.index("cache_read"), CALL_COLUMNS.index("cache_write")


def cache(behaviour="explicit", min_tokens=0) -> PromptCache:
    return PromptCache(behaviour, ttl_s=300.0, min_tokens=min_tokens, granularity=1, breakpoints=4, lookback=0,
                       reuse=1.0)


def split(s):
    return s.read, s.write, s.uncached


# -- the cache model ------------------------------------------------------------------------------
def test_a_kept_prefix_outlives_the_ttl_and_a_longer_live_entry_is_read_first():
    c = cache()
    c.keep_warm(400, 1)
    assert split(c.call(0, 1000, 2)) == (400, 600, 0)  # nothing of its own yet: the kept prefix
    assert split(c.call(10, 1200, 3)) == (1000, 200, 0)  # its own entry is live and longer
    assert split(c.call(1000, 1300, 4)) == (400, 900, 0)  # 990 s later its own entries expired; the kept one not
    assert split(c.call(5000, 300, 1)) == (0, 300, 0)  # a prompt shorter than the kept prefix cannot read it


def test_without_a_kept_prefix_a_pause_reads_nothing():
    c = cache()
    c.call(0, 1000, 2)
    assert split(c.call(1000, 1300, 4)) == (0, 1300, 0)


def test_an_edit_before_the_kept_prefix_ends_drops_it_and_one_after_it_does_not():
    c = cache()
    c.keep_warm(400, 1)
    c.call(0, 1000, 2)
    c.edit(offset=600, span_index=2, freed=100, source="x")
    assert c.call(1000, 1000, 2).read == 400
    c.edit(offset=200, span_index=0, freed=100, source="x")
    assert c.call(2000, 1000, 2).read == 0
    c.keep_warm(300, 1)  # set again from what a recording shows
    assert c.call(3000, 1000, 2).read == 300


def test_a_kept_prefix_below_the_minimum_is_no_entry_and_zero_clears_it():
    c = cache(min_tokens=500)
    c.keep_warm(400, 1)
    assert c.call(0, 1000, 2).read == 0
    c.keep_warm(600, 1)
    assert c.call(1000, 1000, 2).read == 600
    c.keep_warm(0, 0)
    assert c.call(2000, 1000, 2).read == 0


def test_an_implicit_cache_keeps_nothing_warm():
    c = cache("implicit")
    c.keep_warm(400, 1)
    c.call(0, 1000, 2)
    assert c.call(1000, 1300, 4).read == 0


# -- the cache model fed recorded prompts ---------------------------------------------------------------
def test_the_first_calls_read_stays_warm_after_a_pause_in_the_cache_model(tmp_path):
    # Call 1 reads 6,000 tokens no call of the session wrote; call 3 comes 400 s after call 2, past the TTL, and
    # reads them again, as the recorded sessions' calls after a pause mostly do.
    path = tmp_path / "s__1.jsonl"
    reads = [6000, 10_000, 6000, 14_000]
    write_claude_reads(path, [10_000, 12_000, 14_000, 15_000], reads, [0, 10, 410, 420], compact_before=None)
    run = next(cf.read_runs(path))
    price = prices.pricing("claude-opus-4-5")
    assert list(cf.predict(run, price)[:, READ]) == reads
    assert list(cf.predict(run, price, kept_warm={})[:, READ]) == [6000, 10_000, 0, 14_000]  # the null
    assert cf.predict(run, price, kept_warm={3: 5000})[2, READ] == 5000  # another level, from call 3 on
    bare = cf.predict(run, price, recorded=False)  # nothing recorded beyond the prompts: nothing warm
    assert list(bare[:, READ]) == [0, 10_000, 0, 14_000]


def test_a_compaction_keeps_the_warm_prefix_where_no_break_shows_the_system_mark(tmp_path):
    # No cache break shows where the system part ends; the compaction before call 3 still keeps the prefix the
    # first call read (the runtime's, which it sends again), so call 3, 490 s after call 2, reads it, as the
    # replay does, where a compaction keeps the hidden system part.
    path = tmp_path / "s__2.jsonl"
    reads = [6000, 10_000, 6000, 8000]
    write_claude_reads(path, [10_000, 12_000, 8000, 9000], reads, [0, 10, 500, 510], compact_before=2)
    run = next(cf.read_runs(path))
    assert run.system_prefix() is None and run.calls[2].reset
    assert list(cf.predict(run, prices.pricing("claude-opus-4-5"))[:, READ]) == reads


# -- the replay ------------------------------------------------------------------------------------
def recording(times, warm) -> wl.WorkloadData:
    """A 6,000-token hidden system part and three 3,000-token outputs, the first call's read ``warm``."""
    parts = [{"type": "part", "turn": 0, "kind": "system", "tokens": 6000, "hidden": True, "sized_by": "usage"}]
    parts += [{"type": "part", "turn": t, "kind": "tool_output", "tokens": 3000, "key": f"cat f{t}"} for t in (1, 2, 3)]
    header = {"type": "header", "prunesim_workload": 2, "name": "r", "format": "claude-code", "tokenizer": "pieces",
              "model": "claude-opus-4-5", "turns": 3, "parts": 4, "call_times": times, "warm_cache": warm,
              "events": []}
    return wl.WorkloadData(header, parts)


def billed(data, **overrides) -> list[tuple]:
    result, _ = replay(data, sc.load("transcript", overrides or None), "noop")
    return [(int(row[READ]), int(row[WRITE])) for row in result.calls]


def test_the_replay_reads_the_first_calls_warm_prefix_after_a_pause():
    paused = [0.0, 30.0, 430.0]  # call 3 comes 400 s after call 2: the session's own entries expired
    assert billed(recording(paused, 5000)) == [(5000, 1000), (6000, 3000), (5000, 7000)]
    assert billed(recording(paused, None))[2] == (0, 12_000)
    assert billed(recording(paused, 5000), **{"replay.cache_breaks": False})[2] == (0, 12_000)


def test_the_kept_prefix_ends_with_the_system_part_at_the_latest():
    # A first call that read 9,000 tokens (a resumed session's own earlier turns too): after the pause only the
    # 6,000-token system part, which other sessions send as well, is still warm; the first call reads all 9,000.
    data = recording([0.0, 30.0, 430.0], 9000)
    data.parts[1]["turn"] = 0  # the first call's prompt: the system part and 3,000 tokens of conversation
    assert billed(data)[0][0] == 9000 and billed(data)[2] == (6000, 6000)


@pytest.mark.parametrize("name, policy", [("oscillation-40", "naive"), ("reentrancy-60", "tombstoned"),
                                          ("oscillation-40", "observation-masking")])
def test_a_synthetic_run_keeps_nothing_warm(monkeypatch, name, policy):
    def refuse(self, length, spans):
        raise AssertionError("a synthetic scenario set a kept prefix")

    monkeypatch.setattr(PromptCache, "keep_warm", refuse)
    assert run_one(sc.load(name), policy, 0, trace="none").summary["cost_usd"] > 0
