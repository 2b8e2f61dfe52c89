"""Before/after check for engine optimisations: summaries and traces must not change.

    python benchmarks/check_identical.py save /tmp/before.json   # on the old code
    python benchmarks/check_identical.py check /tmp/before.json  # on the new code

Covers every registered policy, several seeds and run lengths, and the full
trace and ledger of a few runs (as a hash); the long session (needs,
``history_gap``, both digests, bounded or not) as well as the short scenarios.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from prunesim.io import scenario_files as scenario_mod  # noqa: E402
from prunesim.io.atomic import json_ready  # noqa: E402
from prunesim.policies import REGISTRY  # noqa: E402
from prunesim.runner import run_one  # noqa: E402


def snapshot() -> dict:
    out = {}
    variants = [("oscillation-40", {"turns": t, "trigger": g}) for t in (40, 400, 3000) for g in (20000, 22000)]
    variants += [
        ("oscillation-40", {"turns": 400, "decision.concurrent": True}),
        ("oscillation-40", {"turns": 400, "decision.reclaim_target": 0.0}),
        ("oscillation-40", {"turns": 400, "trigger": 12000, "decision.concurrent": True}),
        ("oscillation-40", {"turns": 3000, "decision.concurrent": True}),
    ]
    if "reentrancy-60" in scenario_mod.shipped_scenarios():
        variants += [("reentrancy-60", {}), ("reentrancy-60", {"turns": 400}), ("reentrancy-60", {"turns": 3000})]
    if "long-session-2000" in scenario_mod.shipped_scenarios():  # needs, history_gap, the digests
        variants += [("long-session-2000", {"turns": 1500}),
                     ("long-session-2000", {"turns": 1500, "tombstone.digest_max": 2000}),
                     ("long-session-2000", {"turns": 1500, "tombstone.digest": "groups"}),
                     ("long-session-2000", {"turns": 1500, "tombstone.digest": "groups", "tombstone.digest_max": 600}),
                     ("long-session-2000", {"turns": 1500, "need.focus": 0.1, "tombstone.budget": 0})]
    for name, overrides in variants:
        sc = scenario_mod.load(name, overrides)
        tag = name + ":" + ",".join(f"{k}={v}" for k, v in overrides.items())
        for policy in sorted(REGISTRY):
            for seed in range(5 if sc.turns < 1500 else 2):
                traced = sc.turns == 400 or (name == "long-session-2000" and len(overrides) == 1)
                trace = "all" if seed == 0 and traced else "none"
                r = run_one(sc, policy, seed, trace=trace)
                entry = {"summary": json_ready(r.summary)}
                if trace == "all":
                    blob = repr((r.recorder.trace, r.ledger, r.events)).encode()
                    entry["trace_sha"] = hashlib.sha256(blob).hexdigest()
                out[f"{policy}/{tag}/{seed}"] = entry
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("save", "check"),
                    help="save: write the snapshot (on the old code); check: compare with a saved one (the new code)")
    ap.add_argument("path", type=Path, help="the snapshot file (JSON)")
    args = ap.parse_args(argv)
    mode, path = args.mode, args.path
    before = None
    if mode == "check":  # read before the minutes of runs, not after
        try:
            before = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as err:
            ap.error(f"{path}: not a readable snapshot ({err.__class__.__name__}); 'save' makes one")
        if not isinstance(before, dict):
            ap.error(f"{path}: not a snapshot 'save' wrote")
    elif not path.parent.is_dir():
        ap.error(f"{path}: no folder {path.parent} to save into")
    snap = snapshot()
    if mode == "save":
        try:
            path.write_text(json.dumps(snap, indent=1, sort_keys=True))
        except OSError as err:  # a full disk, a folder gone since: one line, not a traceback
            print(f"{ap.prog}: error: {path}: {err.strerror or err}", file=sys.stderr)
            return 1
        print(f"saved {len(snap)} runs to {path}")
        return 0
    common = sorted(set(before) & set(snap))
    bad = [k for k in common if _held_in_both(before[k]) != _held_in_both(snap[k], before[k])]
    print(f"compared {len(common)} runs: {len(bad)} differ")
    for k in bad[:10]:
        print("  differs:", k)
    added = sorted({m for k in common for m in snap[k]["summary"]} - {m for k in common for m in before[k]["summary"]})
    if added:  # a metric defined since the snapshot: new figures, not changed ones
        print(f"metrics not in the snapshot (not compared): {', '.join(added)}")
    return 1 if bad else 0


def _held_in_both(entry: dict, other: dict | None = None) -> dict:
    """The entry with its summary cut to the metrics ``other`` (the snapshot) holds, so that a metric
    added since the snapshot is no difference; every figure both hold must be equal."""
    if other is None:
        return entry
    summary = {m: v for m, v in entry["summary"].items() if m in other["summary"]}
    return {**entry, "summary": summary}


if __name__ == "__main__":
    sys.exit(main())
