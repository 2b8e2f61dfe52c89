"""The turn loop against its pure-Python floor and a bare SimPy loop, side by side in one process.

    python benchmarks/bench_floor.py                       # 50,000 turns, the default policies
    python benchmarks/bench_floor.py --turns 20000 --policies naive,noop --repeat 3

The *floor* is a stripped-down loop of naive on oscillation-40, written for the
measurement: it draws the same numbers in the same order as prunesim (the
workload's chunks, then the pass's judgement and rationale noise), does the same
window arithmetic (the hard ceiling's cuts, the forced drops, the pass's index,
rationale and evictions) and computes the metrics in the loop (the band, the
passes, eviction precision, and the bill of prunesim's own prompt cache), with
plain lists and numbers instead of the engine, its objects and its observers.
Before timing anything it checks that the floor reproduces prunesim's summary
figures (``FIGURES``) on a few seeds: a floor that computed less would flatter
nobody but would measure nothing.

The floor also runs without its metrics, to split it: without the band (the
window metrics' time at each level), without the bill (the prompt cache and
the dollars), and without either, the *bare simulation*: the draws, the window
arithmetic and naive's pass. Each part is checked too, on the figures it
still computes.

Timed, in one process and in turn (``--repeat`` rounds, the fastest of each
taken, CPU time, each run after a full garbage collection so that none pays for
the garbage of the one before): the floor and its three parts; ``prunesim run
oscillation-40 --set turns=N --trace none`` through the command line's own
``main`` for each policy; a bare SimPy loop of two timeouts a turn. Printed: the
floor's parts in microseconds a turn and against the floor; every policy's turns
per second, microseconds a turn and ratio to the SimPy loop, and naive's ratio
to the floor (the goal: at least 0.8).
``--clock timeouts`` runs prunesim without the engine's clock shortcut (every
model call and tool run a SimPy timeout), to measure what the shortcut pays.
Also timed: naive through the engine with no observer at all (the run
``run_one`` builds, its observers left out), to tell what the metrics cost
from what the engine, the policy and the workload cost; and the same with one
observer that hears every kind and does nothing, to tell what publishing costs
(the records and calls the engine makes for listeners) from what the metrics
compute.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import resource
import sys

import numpy as np
import simpy
from prunesim.cli import main as cli_main
from prunesim.io import scenario_files
from prunesim.model.editlog import EditLog
from prunesim.model.engine import Clock, Engine
from prunesim.model.events import KINDS, METHOD, Observer
from prunesim.model.workload import SyntheticToolLoop
from prunesim.observe.cache import PromptCache
from prunesim.observe.metrics.window import BAND_QUANTILES, SHARE_DIGITS, time_quantile
from prunesim.policies import get_policy
from prunesim.runner import EDIT_LOG_TAIL, run_one, streams

SCENARIO = "oscillation-40"
POLICIES = ("noop", "recency", "naive", "slack-gated", "tombstoned")
# The figures the floor computes as prunesim does: the simulation's own (the clock, the window, the passes'
# counters), the band's and the bill's.
SIMULATED = ("sim_time_s", "final_utilization", "forced_truncations", "truncated_tokens", "passes", "sum_net_tokens",
             "cut_passes", "policy_evicted_tokens", "needed_evicted_tokens")
BANDED = ("peak_utilization", "first_trigger_turn", "band_floor", "share_above_trigger", "share_at_ceiling",
          "band_p10", "band_p90")
BILLED = ("input_tokens_billed", "cache_read_tokens", "cache_write_tokens", "invalidated_tokens", "cost_usd")
FIGURES = SIMULATED + BANDED + BILLED
# The floor's variants: (row, band metrics computed, bill computed).
FLOORS = (("floor", True, True), ("floor without the band", False, True), ("floor without the bill", True, False),
          ("floor without either (the bare simulation)", False, False))
CHUNK = 1024


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _sizes(rng, dist, n, scale=None):
    mu = np.log(dist.mean) - dist.sigma**2 / 2
    draws = rng.lognormal(mu, dist.sigma, n) if dist.sigma > 0 else np.full(n, dist.mean)
    if scale is not None:
        draws = draws * scale
    return np.clip(np.rint(draws), dist.min, dist.max).astype(np.int64)


def floor_naive(sc, seed: int, band: bool = True, bill: bool = True) -> dict:
    """naive on ``sc`` (a turn-unit synthetic workload, hard budget, no repeats), as plain Python; without
    ``band`` the window metrics' band is not followed, without ``bill`` no call is billed (their figures are
    then left at their starting values)."""
    wp, lat, dp, pricing = sc.workload, sc.latency, sc.decision, sc.pricing
    assert sc.hard and wp.turn_unit and wp.repeat_rate == 0 and not wp.events and not dp.reentrant
    rngs = streams(seed)
    wrng, prng = rngs["workload"], rngs["policy"]
    ceiling, trigger = sc.budget, sc.trigger  # a hard budget: the ceiling
    base, per_in, per_out = lat.model_base_s, lat.model_per_input_token_s, lat.model_per_output_token_s
    quality, protect, reclaim, select_max = dp.selection_quality, dp.protect_recent_turns, dp.reclaim_target, \
        dp.select_max
    cache = PromptCache.from_pricing(pricing)
    r_read, r_write, r_input, r_output = (pricing.cache_read * 1e-6, pricing.cache_write * 1e-6,
                                          pricing.input * 1e-6, pricing.output * 1e-6)
    # The window: id -> [tokens, turn, stale_at, artifact, pinned]; the cache's view: ids and tokens in order.
    window: dict[int, list] = {}
    c_ids: list[int] = []
    c_tok: list[int] = []
    pending: list[tuple] = []  # (id, freed, source) since the last call
    st = dict(util=0, next_id=0, now=0.0, peak=0, first=-1, floor=-1, since=0.0, level=0, truncs=0, trunc_tok=0,
              passes=0, net=0, cut=0, ev_tok=0, need_tok=0, billed=0, read=0, write=0, inval=0, cost=0.0)
    held: dict[int, float] = {}

    def point(util: int, turn: int, up: bool) -> None:  # the window metrics' band, after a change
        if up and util > st["peak"]:
            st["peak"] = util
        if st["first"] >= 0:
            held[st["level"]] = held.get(st["level"], 0.0) + (st["now"] - st["since"])
            st["since"], st["level"] = st["now"], util
            if util < st["floor"]:
                st["floor"] = util
        elif up and util >= trigger:
            st["first"], st["floor"], st["since"], st["level"] = turn, util, st["now"], util

    def add(tokens: int, turn: int, stale_at: int, artifact: bool, pinned: bool = False) -> int:
        st["next_id"] += 1
        room = ceiling - st["util"]
        cut = tokens - room if room > 0 else tokens
        if cut > 0:
            tokens -= cut
            st["truncs"] += 1
            st["trunc_tok"] += cut
        if tokens > 0:
            window[st["next_id"]] = [tokens, turn, stale_at, artifact, pinned]
            st["util"] += tokens
            if bill:
                c_ids.append(st["next_id"])
                c_tok.append(tokens)
            if band:
                point(st["util"], turn, True)
        return tokens

    def remove(span_id: int, turn: int, source) -> int:
        tokens = window.pop(span_id)[0]
        st["util"] -= tokens
        if bill:
            pending.append((span_id, tokens, source))
        if band:
            point(st["util"], turn, False)
        return tokens

    def charge(prompt: int, output: int) -> None:  # the cost observer's bill of a model call
        if pending:
            changes = []
            for span_id, freed, source in pending:
                i = c_ids.index(span_id)
                changes.append((sum(c_tok[:i]), i, freed, source))
                del c_ids[i]
                del c_tok[i]
            pending.clear()
            cache.edits(changes)
        spans = len(c_ids)
        read, write, uncached, invalidated, source = cache.bill(
            st["now"], prompt, spans, st["util"] if prompt > st["util"] else None, spans)
        st["cost"] += read * r_read + write * r_write + uncached * r_input + output * r_output
        st["billed"] += prompt
        st["read"] += read
        st["write"] += write
        if invalidated and source != "runtime":
            st["inval"] += invalidated

    def naive_pass(turn: int) -> None:
        cutoff = turn - protect
        cands = [(i, s) for i, s in window.items() if not s[4] and (s[1] <= cutoff or s[3])]
        n = len(cands)
        index = int(round(dp.index_base + dp.index_per_candidate * n))
        draws = prng.random(n).tolist()
        judged = [c for c, u in zip(cands, draws, strict=True) if (u < quality) == (turn >= c[1][2])]
        judged.sort(key=lambda c: c[1][0], reverse=True)
        selected, total = [], 0
        for span_id, s in judged:
            if total >= reclaim or len(selected) >= select_max:
                break
            selected.append(span_id)
            total += s[0]
        noise = prng.lognormal(0.0, dp.rationale_sigma, len(selected)).tolist() if selected else []
        per_span = [max(1, int(round(dp.rationale_per_span * x))) for x in noise]
        r_base = int(dp.rationale_base)
        st["passes"] += 1
        before = st["util"]
        if before + index > ceiling:  # the runtime drops the oldest unpinned spans to fit the index
            keep = set(selected)
            for span_id in [i for i, s in window.items() if not s[4]]:
                if st["util"] + index <= ceiling:
                    break
                if span_id not in keep:
                    st["truncs"] += 1
                    st["trunc_tok"] += remove(span_id, turn, "runtime")
        index_kept = add(index, turn, turn, True)
        prompt = before + index_kept
        st["now"] = st["now"] + (base + per_in * prompt + per_out * (r_base + sum(per_span)))
        room = max(0, ceiling - st["util"])
        written, rationale = 0, min(r_base, room)
        for extra in per_span:
            if rationale + extra > room:
                break
            rationale += extra
            written += 1
        if bill:
            charge(prompt, rationale)
        cut = rationale < r_base + sum(per_span)
        if rationale:
            add(rationale, turn, turn + 1, True)
        if cut:
            st["truncs"] += 1
            st["trunc_tok"] += r_base + sum(per_span) - rationale
        evicted = 0
        for span_id in selected[:written]:
            if span_id in window:
                stale_at = window[span_id][2]
                freed = remove(span_id, turn, st["passes"])
                evicted += freed
                st["ev_tok"] += freed
                if turn < stale_at:
                    st["need_tok"] += freed
        st["net"] += evicted - index_kept - rationale
        st["cut"] += int(cut)

    for s in wp.initial:
        add(s.tokens, 0, s.stale_after, False, s.pinned)
    mu_t = np.log(max(lat.tool_mean_s, 1e-9)) - lat.tool_sigma**2 / 2
    first = 1
    while first <= sc.turns:
        n = CHUNK
        scale = None
        if wp.tool_output_early > 0:
            scale = 1 + wp.tool_output_early * np.exp(-(np.arange(first, first + n, dtype=float) - 1)
                                                      / wp.tool_output_early_turns)
        cols = (_sizes(wrng, wp.reasoning, n).tolist(), _sizes(wrng, wp.tool_call, n).tolist(),
                _sizes(wrng, wp.tool_output, n, scale).tolist(),
                wrng.geometric(1.0 / wp.reasoning_stale_after, n).tolist(),
                wrng.geometric(1.0 / wp.output_stale_after, n).tolist(),
                (wrng.lognormal(mu_t, lat.tool_sigma, n) if lat.tool_mean_s > 0 else np.zeros(n)).tolist())
        for i, (r, c, o, r_st, o_st, t_s) in enumerate(zip(*cols, strict=True)):
            turn = first + i
            if turn > sc.turns:
                break
            prompt = st["util"]
            if bill:
                charge(prompt, r + c)
            st["now"] = st["now"] + (base + per_in * prompt + per_out * (r + c))
            st["now"] = st["now"] + t_s
            add(r + c + o, turn, turn + max(r_st, o_st), False)
            if st["util"] >= trigger:
                naive_pass(turn)
        first += CHUNK
    if st["first"] >= 0:
        held[st["level"]] = held.get(st["level"], 0.0) + (st["now"] - st["since"])
    return _summary(st, held, sc)


def _summary(st: dict, held: dict, sc) -> dict:
    out = {"sim_time_s": round(st["now"], 6), "final_utilization": st["util"], "peak_utilization": st["peak"],
           "first_trigger_turn": st["first"], "band_floor": st["floor"]}
    if st["first"] < 0:
        out.update(share_above_trigger=0.0, share_at_ceiling=0.0, band_p10=-1, band_p90=-1)
    else:
        levels = sorted(held)
        seconds = [held[u] for u in levels]
        total = sum(seconds)

        def share(keep) -> float:
            return round(sum(s for u, s in zip(levels, seconds, strict=True) if keep(u)) / total, SHARE_DIGITS) \
                if total > 0 else 0.0
        p10, p90 = (time_quantile(levels, seconds, q) for q in BAND_QUANTILES)
        out.update(share_above_trigger=share(lambda u: u > sc.trigger),
                   share_at_ceiling=share(lambda u: u >= sc.budget), band_p10=p10, band_p90=p90)
    out.update(forced_truncations=st["truncs"], truncated_tokens=st["trunc_tok"], passes=st["passes"],
               sum_net_tokens=st["net"], cut_passes=st["cut"], policy_evicted_tokens=st["ev_tok"],
               needed_evicted_tokens=st["need_tok"], input_tokens_billed=st["billed"], cache_read_tokens=st["read"],
               cache_write_tokens=st["write"], invalidated_tokens=st["inval"], cost_usd=round(st["cost"], 9))
    return out


def check(turns: int, seeds) -> None:
    """The floor must give prunesim's figures, or it is not naive's floor; its parts, the figures they keep."""
    sc = scenario_files.load(SCENARIO, {"turns": turns})
    for seed in seeds:
        theirs = run_one(sc, "naive", seed).summary
        for row, band, bill in FLOORS:
            ours = floor_naive(sc, seed, band, bill)
            kept = SIMULATED + BANDED * band + BILLED * bill
            bad = {k: (ours[k], theirs[k]) for k in kept if ours[k] != theirs[k]}
            if bad:
                raise SystemExit(f"the {row} differs from prunesim at {turns} turns, seed {seed}: {bad}")
    print(f"floor = prunesim on {len(FIGURES)} figures (its parts on those they compute), {turns} turns, "
          f"seeds {list(seeds)}")


def timed(fn, collect: bool = False) -> float:
    """CPU seconds ``fn()`` takes; with ``collect``, timed after a full garbage collection."""
    if collect:
        gc.collect()
    cpu = _cpu()
    fn()
    return _cpu() - cpu


def prunesim_run(policy: str, turns: int) -> None:
    argv = ["run", SCENARIO, "--policy", policy, "--set", f"turns={turns}", "--trace", "none"]
    with contextlib.redirect_stdout(io.StringIO()):
        if cli_main(argv) != 0:
            raise SystemExit(f"prunesim run --policy {policy} failed")


# An observer of every kind that does nothing with what it hears.
Listener = type("Listener", (Observer,), {METHOD[kind]: lambda self, *args: None for kind in KINDS})


def engine_alone(sc, policy: str, seed: int = 0, observers=()) -> None:
    """``policy`` on ``sc`` as ``run_one`` builds it, with ``observers`` only (none: the engine, the policy and the
    workload)."""
    rngs = streams(seed)
    lat = sc.latency
    workload = SyntheticToolLoop(sc.workload, sc.turns, lat.tool_mean_s, lat.tool_sigma, rngs["workload"])
    Engine(sc, get_policy(policy)(sc, rngs["policy"]), workload, observers, None, EditLog(tail=EDIT_LOG_TAIL)).run()


def simpy_loop(turns: int) -> None:
    def loop(env):
        for _ in range(turns):
            yield env.timeout(1.0)
            yield env.timeout(1.0)
    env = simpy.Environment()
    env.process(loop(env))
    env.run()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--clock", choices=("shortcut", "timeouts"), default="shortcut",
                    help="timeouts: every model call and tool run is a SimPy timeout (no clock shortcut)")
    args = ap.parse_args(argv)
    if args.clock == "timeouts":
        Clock._SHORTCUT = False
    policies = args.policies.split(",")
    check(3000, range(3))
    sc = scenario_files.load(SCENARIO, {"turns": args.turns})
    runs = {row: (lambda b=band, c=bill: floor_naive(sc, 0, b, c)) for row, band, bill in FLOORS}
    runs.update({policy: (lambda p=policy: prunesim_run(p, args.turns)) for policy in policies})
    runs.update(alone=lambda: engine_alone(sc, "naive"),
                listened=lambda: engine_alone(sc, "naive", observers=[Listener()]),
                simpy=lambda: simpy_loop(args.turns))
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(args.repeat):  # in turn, so that every loop meets the same load
        for name, run in runs.items():
            best[name] = min(best[name], timed(run, collect=True))
    rate = {k: args.turns / v for k, v in best.items()}
    print(f"{args.turns:,} turns, fastest of {args.repeat}, CPU time, clock {args.clock}; "
          f"SimPy loop {rate['simpy']:,.0f} turns/s")
    print(f"floor (naive, metrics in the loop): {rate['floor']:,.0f} turns/s, "
          f"{rate['floor'] / rate['simpy']:.3f} of SimPy")
    print("| floor | us/turn (CPU) | / floor |")
    print("| --- | ---: | ---: |")
    for row, _, _ in FLOORS:
        print(f"| {row} | {best[row] / args.turns * 1e6:.2f} | {rate[row] / rate['floor']:.3f} |")
    print("| policy | turns/s (CPU) | us/turn | / SimPy loop | / floor |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for policy in policies:
        vs_floor = f"{rate[policy] / rate['floor']:.3f}" if policy == "naive" else ""
        print(f"| {policy} | {rate[policy]:,.0f} | {best[policy] / args.turns * 1e6:.2f} | "
              f"{rate[policy] / rate['simpy']:.3f} | {vs_floor} |")
    for key, row in (("alone", "naive, the engine with no observer"),
                     ("listened", "naive, the engine with one observer that does nothing")):
        print(f"| {row} | {rate[key]:,.0f} | {best[key] / args.turns * 1e6:.2f} | {rate[key] / rate['simpy']:.3f} | "
              f"{rate[key] / rate['floor']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
