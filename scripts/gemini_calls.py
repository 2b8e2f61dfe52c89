"""What Gemini's implicit cache did, call by call, in the mini-swe-agent dev runs, and what predicts it out of sample.

    python scripts/gemini_calls.py [--traces ../shared/traces] [--folds 5]

Each call of ``mini-swe-agent-dev`` records its prompt, its cached tokens, its
time (``created``) and the upstream provider the router sent it to. A call
*can read* when the previous prompt of its run holds at least one 2,048-token
block; a *miss* is a call that can read and records no cached tokens; a *hit*
records some. The shipped model (the null below) bills a call ``reuse x`` the
previous prompt floored to 2,048 tokens (``prices.toml``), checked here to be
what ``cache_fidelity.predict`` computes.

1. Steps: cached tokens per block of a hit (the number of blocks is the count
   over 2,048, rounded), and how many hits read more blocks than the previous
   prompt holds at 2,048 reported tokens a block.
2. Misses by what a simulation sees (call number, readable prefix, tokens added
   since the previous call, pause; a prompt that shrank is in no bin of the
   tokens added) and by what it does not (a change of upstream provider, the
   wall clock), with Wilson 95% intervals; the wall clock and the spread of
   misses over runs are tested against misses drawn independently at the rate
   of their call number (2,000 draws, fixed seed).
3. Older entries: hits that read fewer blocks than the previous prompt holds,
   and how far back the last prompt with that many blocks was.
4. Mechanisms judged out of sample against the null: the runs split into
   ``--folds`` folds by sorted name (the i-th run to fold ``i % folds``, as
   ``prunesim fidelity`` splits them), every parameter fitted on the other
   folds. Per run: cost and cached-token errors, and a sign test of each run's
   cost error against the null's. One row more is not a prediction: each call
   billed at the share the other runs read in the same 5 minutes.
5. The floor: how well the best expectation can do when outcomes are random.
   Each call's outcome (recorded over readable tokens) is redrawn from the
   calls of the same call-number bin in all runs, the expectation is that bin's
   mean outcome, and the per-run errors are computed as for a model (500 draws).
   The null's own median gets a distribution-free 95% interval (order
   statistics).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path

import numpy as np
from prunesim.io import prices
from prunesim.observe.metrics.cost import CALL_COLUMNS
from prunesim.observe.metrics.intervals import wilson
from prunesim.studies import cache_fidelity as cf
from scipy.stats import binom, binomtest

MODEL = "gemini-3-pro-preview"
BLOCK = 2048  # the shipped granularity and minimum
CALL_BINS = (2, 6, 11, 21)  # call numbers where a bin starts: 2-5, 6-10, 11-20, 21+
READABLE_BINS = (0, 4096, 8192, 16384)
PAUSE_BINS = (0, 3, 6, 12, 30)  # seconds
ADDED_BINS = (0, 500, 1000, 3000)  # tokens the prompt added to the previous one
LAGS = (1.0, 1.1, 1.25, 1.5, 2.0, 3.0)  # servers to route among: the grid the lag mixture is fitted on


# -- the recorded calls ---------------------------------------------------------------
def upstream(path: Path) -> list[str]:
    """The upstream provider that served each call of a run, as its bill names it."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return [str(((m.get("extra") or {}).get("response") or {}).get("provider"))
            for m in data["messages"] if m.get("role") == "assistant"]


def load(folder: Path, price) -> list[dict]:
    out = []
    runs = sorted(cf.collect(folder)[0], key=lambda r: r.name)
    for run in runs:
        served = upstream(folder / f"{run.name}.traj.json")
        assert len(served) == len(run.calls), run.name
        d = {"name": run.name,
             "prompt": np.array([c.prompt for c in run.calls], float),
             "cached": np.array([c.cached for c in run.calls], float),
             "output": np.array([c.output for c in run.calls], float),
             "time": np.array([c.time_s for c in run.calls], float),
             "bill": np.array([cf.recorded_cost_of_call(c, price) for c in run.calls]),
             "served": served}
        d["shipped"] = cf.predict(run, dataclasses.replace(price, reuse=1.0))[:, CALL_COLUMNS.index("cache_read")]
        out.append(d)
    return out


def readable(d: dict, step: float = BLOCK, lag=1, minimum: float = BLOCK) -> np.ndarray:
    """Per call, the prefix it shares with the prompt ``lag`` calls back, floored to whole steps; 0 below the minimum.

    ``lag`` is one number or one per call (0: nothing to read). A prompt
    shorter than the one before changed its last message (the cost observer
    cuts the cache where that message starts): from then on it shares with
    earlier prompts only what came before that message.
    """
    p = d["prompt"]
    n = len(p)
    before = np.concatenate([[0.0], p[:-1]])
    twice = np.concatenate([[0.0, 0.0], p[:-2]])[:n]
    kept = np.where(p >= before, p, np.minimum(twice, p))  # what of prompt k earlier prompts can share
    lags = np.broadcast_to(np.asarray(lag, int), (n,))
    shared = np.zeros(n)
    for k in range(n):
        j = lags[k]
        if 0 < j <= k:
            shared[k] = min(p[k - j], kept[k - j + 1:k + 1].min())
    x = np.floor(shared / step) * step
    return np.where(x >= minimum, x, 0.0)


def errors(d: dict, read: np.ndarray, price) -> tuple[float, float]:
    """The run's relative error on cached tokens and on dollars, the call's other tokens as recorded."""
    cost = ((d["prompt"] - read) * price.input + read * price.cache_read + d["output"] * price.output) / 1e6
    return (abs(read.sum() - d["cached"].sum()) / d["cached"].sum(),
            abs(cost.sum() - d["bill"].sum()) / d["bill"].sum())


def share(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{k}/{n} = {100 * k / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]" if n else "0/0"


def bin_of(values: np.ndarray, edges) -> np.ndarray:
    return np.searchsorted(np.array(edges), values, side="right") - 1


def label(edges, i: int, unit: str = "", whole: bool = False) -> str:
    """Bin ``i`` of ``edges``: ``a-b`` holds a up to b (b itself too when the values are ``whole`` numbers)."""
    if i == len(edges) - 1:
        return f"{edges[i]}+{unit}"
    return f"{edges[i]}-{edges[i + 1] - (1 if whole else 0)}{unit}"


# -- 1-3: what the bills show -------------------------------------------------------------
def calls_table(data: list[dict]) -> dict:
    """One row per call that can read: the observables and the outcome."""
    cols = {k: [] for k in ("run", "call", "readable", "added", "pause", "switch", "miss", "time", "blocks",
                            "prev_blocks", "lag")}
    for i, d in enumerate(data):
        p, c = d["prompt"], d["cached"]
        for k in range(1, len(p)):
            prev_blocks = int(p[k - 1] // BLOCK)
            if prev_blocks < 1:
                continue
            blocks = int(round(c[k] / BLOCK))
            lag = 0
            if 0 < blocks < prev_blocks:  # the latest earlier prompt that held this many blocks
                back = [j for j in range(k - 1, -1, -1) if p[j] // BLOCK == blocks]
                lag = k - back[0] if back else -1
            for key, v in (("run", i), ("call", k + 1), ("readable", min(p[k - 1], p[k]) // BLOCK * BLOCK),
                           ("added", p[k] - p[k - 1]),
                           ("pause", d["time"][k] - d["time"][k - 1]),
                           ("switch", d["served"][k] != d["served"][k - 1]), ("miss", c[k] == 0),
                           ("time", d["time"][k]), ("blocks", blocks), ("prev_blocks", prev_blocks), ("lag", lag)):
                cols[key].append(v)
    return {k: np.array(v) for k, v in cols.items()}


def steps(data: list[dict]) -> None:
    hits = np.concatenate([d["cached"][d["cached"] > 0] for d in data])
    per_block = hits / np.round(hits / BLOCK)
    over = n = 0
    for d in data:
        p, c = d["prompt"], d["cached"]
        for k in range(1, len(p)):
            if c[k] > 0:
                n += 1
                over += round(c[k] / BLOCK) > p[k - 1] // BLOCK
    q = np.percentile(per_block, [10, 50, 90])
    single = int((np.round(hits / BLOCK) == 1).sum())
    print(f"1. steps: {len(hits)} hits; cached tokens per block median {q[1]:.1f} (10-90%: {q[0]:.1f}-{q[2]:.1f}), "
          f"{100 * q[1] / BLOCK:.2f}% of {BLOCK}; {single} hits read a single block")
    print(f"   hits reading more blocks than the previous prompt holds at {BLOCK} tokens a block: {share(over, n)}")


def misses(t: dict, rng) -> None:
    n, m = len(t["miss"]), int(t["miss"].sum())
    print(f"2. misses: {share(m, n)} of the calls that can read")
    for name, values, edges, unit in (("call number", t["call"], CALL_BINS, ""),
                                      ("readable prefix", t["readable"], READABLE_BINS, " tokens"),
                                      ("tokens added since the previous call", t["added"], ADDED_BINS, ""),
                                      ("tokens added, from call 11 on", np.where(t["call"] >= 11, t["added"], -1),
                                       ADDED_BINS, ""),
                                      ("tokens added, provider unchanged", np.where(~t["switch"], t["added"], -1),
                                       ADDED_BINS, ""),
                                      ("pause", t["pause"], PAUSE_BINS, " s")):
        b = bin_of(values, edges)
        whole = edges is CALL_BINS
        cells = [f"{label(edges, i, unit, whole)}: {share(int(t['miss'][b == i].sum()), int((b == i).sum()))}"
                 for i in range(len(edges))]
        print(f"   by {name}: " + "; ".join(cells))
    sw = t["switch"]
    print(f"   upstream provider changed since the previous call: {share(int(t['miss'][sw].sum()), int(sw.sum()))}; "
          f"unchanged: {share(int(t['miss'][~sw].sum()), int((~sw).sum()))}")
    # Null: each call misses independently at its call-number bin's rate.
    b = bin_of(t["call"], CALL_BINS)
    rate = np.array([t["miss"][b == i].mean() for i in range(len(CALL_BINS))])[b]
    draws = rng.random((2000, n)) < rate
    for name, group in (("5-minute bins of the wall clock", ((t["time"] - t["time"].min()) // 300).astype(int)),
                        ("runs", t["run"])):
        expected = np.bincount(group, weights=rate)
        var = np.bincount(group, weights=rate * (1 - rate))
        keep = var > 0

        def chi2(miss, expected=expected, var=var, keep=keep, group=group):
            seen = np.bincount(group, weights=miss, minlength=len(expected))
            return float(((seen - expected)[keep] ** 2 / var[keep]).sum())

        seen = chi2(t["miss"].astype(float))
        null = np.array([chi2(row.astype(float)) for row in draws])
        above = int((null >= seen).sum())
        p = f"p = {above / len(null):.4f}" if above else f"p < {1 / len(null):.4f}"
        print(f"   spread of misses over {name} ({int(keep.sum())} groups): chi2 {seen:.1f} against a median "
              f"{np.median(null):.1f} for independent misses at their call number's rate, {p}")


def older(t: dict) -> None:
    hit = ~t["miss"]
    short = hit & (t["blocks"] < t["prev_blocks"])
    sw = t["switch"]
    print(f"3. older entries: hits reading fewer blocks than the previous prompt holds: "
          f"{share(int(short.sum()), int(hit.sum()))}; provider unchanged "
          f"{share(int((short & ~sw).sum()), int((hit & ~sw).sum()))}, changed "
          f"{share(int((short & sw).sum()), int((hit & sw).sum()))}")
    lag = t["lag"][short]
    cells = [("2", lag == 2), ("3", lag == 3), ("4-5", (lag >= 4) & (lag <= 5)), ("6+", lag >= 6),
             ("no earlier prompt had that many", lag == -1), ("the previous one did", lag == 1)]
    print("   calls back to the latest prompt with that many blocks: "
          + "; ".join(f"{name}: {int(s.sum())}" for name, s in cells if s.any()))


# -- 4: mechanisms out of sample -------------------------------------------------------------
def lagged(d: dict, servers: float, step: float, minimum: float) -> np.ndarray:
    """Expected readable prefix when each call is routed among ``servers`` caches at random: the prompt j calls
    back is the latest its cache holds with probability (1/n)(1 - 1/n)^(j-1); none, a miss."""
    q = 1.0 / servers
    out = np.zeros(len(d["prompt"]))
    for j in range(1, len(d["prompt"])):
        out += q * (1 - q) ** (j - 1) * readable(d, step, j, minimum)
    return out


def same_provider(d: dict) -> np.ndarray:
    """Per call, how many calls back the latest call served by the same upstream provider came (0: none)."""
    last: dict[str, int] = {}
    out = np.zeros(len(d["served"]), int)
    for k, name in enumerate(d["served"]):
        out[k] = k - last[name] if name in last else 0
        last[name] = k
    return out


def ratio(train: list[dict], basis) -> float:
    return sum(d["cached"].sum() for d in train) / sum(basis(d).sum() for d in train)


def measured_step(train: list[dict]) -> float:
    hits = np.concatenate([d["cached"][d["cached"] > 0] for d in train])
    return float(np.median(hits / np.round(hits / BLOCK)))


def fit_lag(train: list[dict]) -> tuple[float, float]:
    """Servers and hit share by least squares over the fitting calls (servers on the LAGS grid)."""
    y = np.concatenate([d["cached"] for d in train])
    best = None
    for n in LAGS:
        x = np.concatenate([lagged(d, n, BLOCK, BLOCK) for d in train])
        h = y.sum() / x.sum()
        sse = float(((h * x - y) ** 2).sum())
        if best is None or sse < best[0]:
            best = (sse, n, h)
    return best[1], best[2]


def call_bin(d: dict) -> np.ndarray:
    return bin_of(np.arange(1, len(d["prompt"]) + 1), CALL_BINS)


def added(d: dict) -> np.ndarray:
    """Per call, the tokens its prompt added to the previous one (the first call: its whole prompt)."""
    return np.diff(d["prompt"], prepend=0.0)


def added_bin(d: dict) -> np.ndarray:
    return bin_of(added(d), ADDED_BINS)


def bin_rates(binning, count: int):
    """A fit of one reuse per bin: recorded over readable tokens of the fitting calls in each bin."""
    def fit(train: list[dict]) -> np.ndarray:
        out = []
        for i in range(count):
            rec = sum(d["cached"][binning(d) == i].sum() for d in train)
            read = sum(readable(d)[binning(d) == i].sum() for d in train)
            out.append(rec / read if read else 1.0)
        return np.array(out)
    return fit


def by_bin(binning):
    return lambda d, rates: np.where(binning(d) >= 0, rates[np.maximum(binning(d), 0)], 0.0) * readable(d)


MECHANISMS = {
    "null: one reuse x the previous prompt in 2,048-token blocks (shipped)": (
        lambda tr: ratio(tr, readable), lambda d, r: r * readable(d)),
    "the step measured on the bills (block and minimum), one reuse": (
        lambda tr: (s := measured_step(tr), ratio(tr, lambda d: readable(d, s, 1, s))),
        lambda d, f: f[1] * readable(d, f[0], 1, f[0])),
    "an older entry: routed among n caches, n and a hit share fitted": (
        fit_lag, lambda d, f: f[1] * lagged(d, f[0], BLOCK, BLOCK)),
    "a miss probability by call number (one reuse per bin)": (
        bin_rates(call_bin, len(CALL_BINS)), by_bin(call_bin)),
    "a miss probability by the tokens added since the previous call (one reuse per bin)": (
        bin_rates(added_bin, len(ADDED_BINS)), by_bin(added_bin)),
    "a cache per upstream provider, as each bill names it, one reuse": (
        lambda tr: ratio(tr, lambda d: readable(d, lag=same_provider(d))),
        lambda d, r: r * readable(d, lag=same_provider(d))),
}


def judged(data: list[dict], folds: int, price) -> dict[str, np.ndarray]:
    out = {}
    for name, (fit, predict) in MECHANISMS.items():
        errs = [None] * len(data)
        for fold in range(folds):
            train = [d for i, d in enumerate(data) if i % folds != fold]
            params = fit(train)
            for i, d in enumerate(data):
                if i % folds == fold:
                    errs[i] = errors(d, np.round(predict(d, params)), price)
        out[name] = np.array(errs)
    return out


def worst_runs(data: list[dict], t: dict, folds: int, shown: int = 3) -> None:
    """The runs whose cached tokens the null over-predicts most, and the wall-clock windows their misses fell in."""
    fit, predict = next(iter(MECHANISMS.values()))
    over = np.zeros(len(data))
    for fold in range(folds):
        reuse = fit([d for i, d in enumerate(data) if i % folds != fold])
        for i, d in enumerate(data):
            if i % folds == fold:
                over[i] = np.round(predict(d, reuse)).sum() / d["cached"].sum() - 1
    window = ((t["time"] - t["time"].min()) // 300).astype(int)
    rate = np.bincount(window, weights=t["miss"]) / np.maximum(np.bincount(window), 1)
    cells = []
    for i in np.argsort(-over)[:shown]:
        mine = window[(t["run"] == i) & t["miss"]]
        where = ", ".join(f"{np.sum(mine == w)} in window {w} (all runs: {100 * rate[w]:.1f}% missed)"
                          for w in np.unique(mine))
        cells.append(f"{data[i]['name']} cached {100 * over[i]:+.1f}%: misses {where}")
    print(f"   the runs the null over-predicts most (5-minute windows of the wall clock, which spans "
          f"{(t['time'].max() - t['time'].min()) / 60:.0f} minutes):")
    for cell in cells:
        print(f"     {cell}")


def figures(e: np.ndarray) -> str:
    e = 100 * e
    return (f"cost {np.median(e[:, 1]):.2f}% / {np.percentile(e[:, 1], 90):.2f}%, "
            f"cached {np.median(e[:, 0]):.2f}% / {np.percentile(e[:, 0], 90):.2f}%")


def concurrent(data: list[dict], price, width: float = 300.0) -> np.ndarray:
    """Each run judged with, per call, the other runs' recorded over readable tokens in the same window of the
    wall clock (the shipped reuse where they had nothing to read). Not a prediction: those bills are as recent
    as the call's own; it asks whether the provider's state at the time, as they show it, explains the misses."""
    start = min(d["time"].min() for d in data)
    windows = [((d["time"] - start) // width).astype(int) for d in data]
    reads = [readable(d) for d in data]
    size = max(int(w.max()) for w in windows) + 1
    pairs = list(zip(data, windows, reads, strict=True))
    recorded = np.array([np.bincount(w, weights=d["cached"], minlength=size) for d, w, _ in pairs])
    readable_sum = np.array([np.bincount(w, weights=r, minlength=size) for _, w, r in pairs])
    out = []
    for i, d in enumerate(data):
        rec, read = recorded.sum(0) - recorded[i], readable_sum.sum(0) - readable_sum[i]
        share_of = np.where(read > 0, rec / np.where(read > 0, read, 1), price.reuse)
        out.append(errors(d, np.round(share_of[windows[i]] * reads[i]), price))
    return np.array(out)


def mechanisms(data: list[dict], folds: int, price) -> np.ndarray:
    results = judged(data, folds, price)
    results["not a prediction: the other runs' bills in the same 5 minutes of the wall clock"] = concurrent(
        data, price)
    null = next(iter(results.values()))
    print(f"4. out of sample ({folds} folds by sorted name), per run median / p90:")
    for name, e in results.items():
        line = f"   {name}: {figures(e)}"
        if e is not null:
            better = int((e[:, 1] < null[:, 1]).sum())
            worse = int((e[:, 1] > null[:, 1]).sum())
            p = binomtest(better, better + worse).pvalue if better + worse else 1.0
            line += f"; cost better than the null on {better} runs, worse on {worse} (sign test p = {p:.2f})"
        print(line)
    return null


# -- 5: the floor ----------------------------------------------------------------------
def floor(data: list[dict], null: np.ndarray, price, rng) -> None:
    bins = [bin_of(np.arange(1, len(d["prompt"]) + 1), CALL_BINS) for d in data]
    reads = [readable(d) for d in data]
    pools, means = {}, {}
    for d, b, r in zip(data, bins, reads, strict=True):
        can = r > 0
        for i in np.unique(b[can]):
            pools.setdefault(int(i), []).extend((d["cached"][can & (b == i)] / r[can & (b == i)]).tolist())
    for i, v in pools.items():
        pools[i] = np.array(v)
        means[i] = float(np.mean(v))
    medians, p90s = [], []
    for _ in range(500):
        errs = []
        for d, b, r in zip(data, bins, reads, strict=True):
            can = r > 0
            f = np.zeros(len(r))
            expect = np.zeros(len(r))
            for i in np.unique(b[can]):
                s = can & (b == i)
                f[s] = rng.choice(pools[int(i)], int(s.sum()))
                expect[s] = means[int(i)]
            drawn = dict(d, cached=np.round(f * r))
            cost = ((d["prompt"] - drawn["cached"]) * price.input + drawn["cached"] * price.cache_read
                    + d["output"] * price.output) / 1e6
            drawn["bill"] = cost
            errs.append(errors(drawn, np.round(expect * r), price)[1])
        medians.append(np.median(errs))
        p90s.append(np.percentile(errs, 90))
    m, p = 100 * np.percentile(medians, [5, 50, 95]), 100 * np.percentile(p90s, [5, 50, 95])
    print(f"5. floor: the best expectation against outcomes redrawn within call-number bins: per-run cost median "
          f"{m[1]:.2f}% (5-95% of draws: {m[0]:.2f}-{m[2]:.2f}%), p90 {p[1]:.2f}% ({p[0]:.2f}-{p[2]:.2f}%)")
    e = np.sort(100 * null[:, 1])
    n = len(e)
    # The widest-ranked pair of order statistics (lo, n + 1 - lo) that holds the median with 95% probability.
    lo = max(r for r in range(1, n // 2 + 1) if binom.cdf(n - r, n, 0.5) - binom.cdf(r - 1, n, 0.5) >= 0.95)
    hi = n + 1 - lo
    print(f"   the null's per-run cost median {np.median(e):.2f}%, 95% interval {e[lo - 1]:.2f}-{e[hi - 1]:.2f}% "
          f"(order statistics {lo} and {hi} of {n})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.environ.get("PRUNESIM_TRACES", str(Path(__file__).resolve().parents[2] / "shared" / "traces"))
    ap.add_argument("--traces", type=Path, default=Path(default))
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args()
    price = prices.pricing(MODEL)
    data = load(args.traces / "mini-swe-agent-dev", price)
    for d in data:  # the null is the shipped cache model
        assert np.array_equal(d["shipped"], readable(d)), d["name"]
    rng = np.random.default_rng(24)
    print(f"{len(data)} runs, {sum(len(d['prompt']) for d in data)} calls ({MODEL}, mini-swe-agent-dev)")
    steps(data)
    t = calls_table(data)
    misses(t, rng)
    older(t)
    null = mechanisms(data, args.folds, price)
    worst_runs(data, t, args.folds)
    floor(data, null, price, rng)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
