"""What the observers cost a turn of naive on oscillation-40, run as ``prunesim run --trace none`` runs it.

    python benchmarks/bench_observers.py                  # 20,000 turns, fastest of 5
    python benchmarks/bench_observers.py --turns 5000 --repeat 3

Printed, from one process:

- the handler calls per turn, by kind and observer (the bus's bindings, counted
  as they are heard; a deferred observer's are counted when its batch is heard);
- CPU time per turn (the fastest of ``--repeat`` rounds, each configuration in
  turn): the run as it is; with each registered observer muted (bound to
  nothing but ``run_end``, so its summary is computed but means nothing); with
  all of them muted; and with the deferred observers' batch at other sizes
  (``1``: each event heard as it comes, as a live observer hears it);
- the engine with no observer at all (``bench_floor.py``'s row of that name).

The figures of docs/performance.md, "What the observers cost a turn", come
from this script.
"""

from __future__ import annotations

import argparse
import collections
import gc
import sys

import bench_floor  # beside this script: python puts the script's folder first on the path
from prunesim import observe, runner
from prunesim.io import scenario_files
from prunesim.model import events
from prunesim.observe.metrics.cost import CostMetrics
from prunesim.runner import run_one

BATCHES = (1, 64, 256, 4096)


def counted_calls(sc) -> tuple[collections.Counter, list]:
    """(kind, observer) -> handler calls in one run, each observer's handlers wrapped where the bus finds them;
    and what the cost observer heard, in order: (handler name, arguments)."""
    counts: collections.Counter = collections.Counter()
    heard: list[tuple] = []
    build = runner.build_observers

    def counting(run):
        built = build(run)
        for obs in built:
            for kind in events.KINDS:
                method = events.METHOD[kind]
                if getattr(type(obs), method) is getattr(events.Observer, method):
                    continue
                handler, key = getattr(obs, method), (kind, type(obs).__name__)
                log = heard if isinstance(obs, CostMetrics) else None

                def wrapped(*args, _h=handler, _key=key, _log=log, _name=method):
                    counts[_key] += 1
                    if _log is not None:
                        _log.append((_name, args))
                    return _h(*args)
                setattr(obs, method, wrapped)  # the bus binds the instance's attribute
        return built

    runner.build_observers = counting
    try:
        run_one(sc, "naive", 0, trace="none")
    finally:
        runner.build_observers = build
    return counts, heard


def heard_again(sc, heard: list) -> tuple[float, float]:
    """CPU seconds a fresh cost observer takes to hear ``heard`` in a loop that does nothing else; and the mean
    number of spans its window held at a model call."""
    obs = CostMetrics(observe.RunContext(sc, "naive", 0, sc.trigger, "none"))
    handlers = {name: getattr(obs, name) for name, _ in heard}
    spans, calls = 0, 0

    def hear() -> None:
        for name, args in heard:
            handlers[name](*args)

    seconds = bench_floor.timed(hear)
    fresh = CostMetrics(observe.RunContext(sc, "naive", 0, sc.trigger, "none"))
    for name, args in heard:
        if name == "on_model_call":
            spans, calls = spans + len(fresh._ids), calls + 1
        getattr(fresh, name)(*args)
    return seconds, spans / max(calls, 1)


def in_batches(sc) -> float | None:
    """CPU seconds of one run spent hearing the deferred observers' batches (None: no deferred observers)."""
    flush = getattr(events.Bus, "flush", None)
    if flush is None:
        return None
    spent = [0.0]

    def timed_flush(self, *args):
        spent[0] += bench_floor.timed(lambda: flush(self, *args))
    events.Bus.flush = timed_flush
    try:
        run_one(sc, "naive", 0, trace="none")
    finally:
        events.Bus.flush = flush
    return spent[0]


def muting(names):
    """``build_observers`` with the observers of these classes bound to nothing but ``run_end``."""
    build = runner.build_observers

    def muted(run):
        built = build(run)
        for obs in built:
            if type(obs).__name__ in names:
                obs.muted = frozenset(events.KINDS) - {"run_end"}
        return built
    return muted


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    sc = scenario_files.load(bench_floor.SCENARIO, {"turns": args.turns})
    counts, heard = counted_calls(sc)
    print(f"handler calls per turn ({args.turns:,} turns of naive), {sum(counts.values()) / args.turns:.2f} in all:")
    for (kind, name), n in counts.most_common():
        if n >= args.turns / 100:
            print(f"  {kind:16s} {name:18s} {n / args.turns:6.3f}")

    names = [cls.__name__ for cls in observe.REGISTRY.values()]
    # An install from before deferred observers (c908ce8) has no batch: the same rows, the batches left out.
    build, batch = runner.build_observers, getattr(events, "DEFERRED_BATCH", None)
    configs = {"as it is": (build, batch)}
    configs.update({f"{name} muted": (muting({name}), batch) for name in names})
    configs["all muted"] = (muting(set(names)), batch)
    if batch is not None:
        configs.update({f"batch {n}": (build, n) for n in BATCHES})
    best = dict.fromkeys([*configs, "the engine with no observer"], float("inf"))
    for _ in range(args.repeat):
        for label, (builder, size) in configs.items():
            runner.build_observers = builder
            if size is not None:
                events.DEFERRED_BATCH = size
            gc.collect()  # every configuration starts from the same heap: a collection due mid-run lands on none
            try:
                best[label] = min(best[label], bench_floor.timed(lambda: run_one(sc, "naive", 0, trace="none")))
            finally:
                runner.build_observers = build
                if batch is not None:
                    events.DEFERRED_BATCH = batch
        best["the engine with no observer"] = min(best["the engine with no observer"],
                                                  bench_floor.timed(lambda: bench_floor.engine_alone(sc, "naive")))
    us = {label: t / args.turns * 1e6 for label, t in best.items()}
    again = [heard_again(sc, heard) for _ in range(args.repeat)]
    batches = [in_batches(sc) for _ in range(args.repeat)]
    print(f"the cost observer's {len(heard) / args.turns:.2f} events a turn heard again in a loop: "
          f"{min(a[0] for a in again) / args.turns * 1e6:.2f} us a turn (its window: {again[0][1]:.1f} spans at a "
          f"call, on average)")
    if batches[0] is not None:
        print(f"hearing the deferred observers' batches: {min(batches) / args.turns * 1e6:.2f} us a turn")
    print(f"CPU us per turn, fastest of {args.repeat} (deferred batch {batch or 'none'}):")
    for label, value in us.items():
        saved = f"  ({us['as it is'] - value:+.2f} against as it is)" if label != "as it is" else ""
        print(f"  {label:30s} {value:6.2f}{saved}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
