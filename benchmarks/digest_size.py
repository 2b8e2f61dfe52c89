"""The tombstone digest's size against the keys it covers: exact ("keys") against grouped ("groups").

    python benchmarks/digest_size.py                  # real keys (traces) and the synthetic scenario's keys
    python benchmarks/digest_size.py --root 8,16,32   # other allowances of the grouped digest

Keys, in the order an agent ran them:

* ``real``: the distinct tool-call keys of the transcripts in
  ``$PRUNESIM_TRACES/mini-swe-agent-dev`` (or ``../shared/traces``), runs in
  name order. Two-fold cross-validation: the keys of the runs at even
  positions are folded, then the digest is asked about the keys of the runs at
  odd positions that the even runs never ran (and the other way round). The
  share it claims is the false "recorded" rate on keys it was not built from.
* ``synthetic``: the 53-character command keys of ``long-session-2000`` (no
  shared structure beyond their first word); held-out keys are later turns' keys.

For each number of keys folded: the exact digest's tokens, the grouped
digest's tokens and entries, tokens per key and per square root of keys, and
the false "recorded" rate. Every folded key is checked to be covered.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prunesim.model.digest import Digest  # noqa: E402
from prunesim.model.grouped_digest import GroupedDigest  # noqa: E402

TRACES = Path(os.environ.get("PRUNESIM_TRACES", ROOT.parent / "shared" / "traces"))
BASE = 16  # the scenario default digest_base


def real_runs(folder: Path) -> list[list[str]]:
    """Each run's distinct tool-call keys, in the order first run."""
    from prunesim.studies.transcript_replay import iter_sources

    runs = []
    for _, data in iter_sources([folder]):
        if isinstance(data, Exception):
            raise SystemExit(f"{folder}: {data}")
        seen: dict[str, None] = {}
        for p in data.parts:
            if p["kind"] == "tool_call" and p.get("key"):
                seen.setdefault(p["key"], None)
        runs.append((data.name, list(seen)))
    runs.sort()
    return [keys for _, keys in runs]


def synthetic_keys(n: int, first: int = 1) -> list[str]:
    from prunesim.io import scenario_files
    from prunesim.model.workload import SyntheticToolLoop

    sc = scenario_files.load("long-session-2000")
    loop = SyntheticToolLoop(sc.workload, n, 0.0, 0.0, None)
    return [loop.command_key(t) for t in range(first, first + n)]


def measure(folded: list[str], held_out: list[str], root: int, sizes: list[int]) -> list[dict]:
    rows = []
    exact, grouped = Digest(BASE), GroupedDigest(BASE, root)
    done = 0
    for n in sizes:
        for key in folded[done:n]:
            exact.add(key)
            grouped.add(key)
        done = n
        missing = [k for k in folded[:n] if k not in grouped]
        if missing:
            raise SystemExit(f"a folded key is not covered: {missing[0]!r}")
        unseen = [k for k in held_out if k not in set(folded[:n])]
        claimed = sum(k in grouped for k in unseen)
        rows.append({"keys": n, "exact": exact.tokens, "grouped": grouped.tokens, "entries": len(grouped),
                     "false": claimed / len(unseen) if unseen else float("nan"), "unseen": len(unseen)})
    return rows


def show(title: str, rows: list[dict]) -> None:
    print(title)
    print("| keys folded | exact tokens | grouped tokens | grouped entries | grouped tokens / key | "
          "grouped tokens / sqrt(keys) | false \"recorded\" (held-out keys) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['keys']:,} | {r['exact']:,} | {r['grouped']:,} | {r['entries']:,} | "
              f"{r['grouped'] / r['keys']:.2f} | {r['grouped'] / math.sqrt(r['keys']):.1f} | "
              f"{r['false']:.3f} of {r['unseen']:,} |")
    print()


def sizes_up_to(n: int) -> list[int]:
    steps = [s for s in (10, 30, 100, 300, 1000, 3000, 10000, 30000, 100000) if s < n]
    return steps + [n]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default="16", help="digest_root values (tokens per square root of keys)")
    ap.add_argument("--synthetic", type=int, default=30000, help="synthetic keys folded")
    args = ap.parse_args()
    folder = TRACES / "mini-swe-agent-dev"
    runs = real_runs(folder) if folder.is_dir() else []
    for root in (int(x) for x in args.root.split(",")):
        if runs:
            halves = ([k for r in runs[0::2] for k in r], [k for r in runs[1::2] for k in r])
            for name, (fold, other) in (("even", halves), ("odd", halves[::-1])):
                fold = list(dict.fromkeys(fold))
                show(f"real keys, {folder.name}, folded: runs at {name} positions, asked: the other runs' keys, "
                     f"digest_root {root}", measure(fold, list(dict.fromkeys(other)), root, sizes_up_to(len(fold))))
        else:
            print(f"{folder}: not found, real keys skipped\n")
        keys = synthetic_keys(args.synthetic)
        held = synthetic_keys(2000, first=args.synthetic + 1)
        show(f"synthetic keys (long-session-2000), digest_root {root}",
             measure(keys, held, root, sizes_up_to(len(keys))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
