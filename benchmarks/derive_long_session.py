"""Derive the long-session-2000 workload's figures from real transcripts (not part of the test run).

    python benchmarks/derive_long_session.py [FOLDER]   # default: ../shared/traces/mini-swe-agent-dev

Imports every transcript in FOLDER (sizes and keys only, with the default
tokenizer) and prints, for reasoning, tool calls and tool outputs, the
lognormal that ``[workload.*]`` takes (mean in tokens and sigma, the standard
deviation of log size) with the 1st and 99th percentiles as clipping bounds;
then the repeated-command rate (tool calls whose key was called earlier in the
same run, per turn), how far back a repeat reaches (turns since the latest
call with the same key), and, for cross-validation, the same figures on each
half of the runs (even and odd positions in sorted order), so a reader sees how
much they move between halves. The figures are recorded in
``scenarios/long-session-2000.toml``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prunesim.studies.transcript_replay import iter_sources  # noqa: E402

DEFAULT = Path(os.environ.get("PRUNESIM_TRACES", ROOT.parent / "shared" / "traces")) / "mini-swe-agent-dev"


def lognormal(sizes: list[int]) -> dict:
    logs = np.log(np.maximum(np.array(sizes, dtype=float), 1.0))
    return {
        "n": len(sizes),
        "mean": round(float(np.mean(sizes)), 1),
        "sigma": round(float(np.std(logs)), 3),
        "p01": int(np.percentile(sizes, 1)),
        "p99": int(np.percentile(sizes, 99)),
    }


def figures(runs: list) -> dict:
    sizes: dict[str, list[int]] = {"reasoning": [], "tool_call": [], "tool_output": []}
    turns = repeats = 0
    gaps: list[int] = []
    key_chars: list[int] = []
    first: dict[str, list[int]] = {"system": [], "user": []}
    for data in runs:
        turns += data.turns
        last_call: dict[str, int] = {}
        for p in data.parts:
            if p["kind"] in sizes and p["turn"] > 0:
                sizes[p["kind"]].append(p["tokens"])
            if p["turn"] == 0 and p["kind"] in first:
                first[p["kind"]].append(p["tokens"])
            if p["kind"] == "tool_call" and p.get("key"):
                key_chars.append(len(p["key"]))
            if p["kind"] == "tool_call" and p.get("key"):
                if p["key"] in last_call:
                    repeats += 1
                    gaps.append(p["turn"] - last_call[p["key"]])
                last_call[p["key"]] = p["turn"]
    out = {kind: lognormal(v) for kind, v in sizes.items() if v}
    for kind, v in first.items():
        out[f"initial_{kind}_median"] = float(np.median(v)) if v else None
    out["key_chars_median"] = float(np.median(key_chars)) if key_chars else None
    out["runs"] = len(runs)
    out["turns"] = turns
    out["repeats"] = repeats
    out["repeat_rate_per_turn"] = round(repeats / turns, 4) if turns else math.nan
    out["repeats_per_36_turns"] = round(36 * repeats / turns, 2) if turns else math.nan
    if gaps:
        out["repeat_gap"] = {"median": float(np.median(gaps)), "mean": round(float(np.mean(gaps)), 2),
                             "p90": float(np.percentile(gaps, 90))}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", type=Path, default=DEFAULT, help=f"the transcripts (default: {DEFAULT})")
    folder = ap.parse_args(argv).folder
    if not folder.exists():
        ap.error(f"{folder}: no transcripts there")
    runs = []
    for path, data in iter_sources([folder]):
        if isinstance(data, Exception):
            print(f"skipped {path.name}: {data}")
            continue
        runs.append(data)
    runs.sort(key=lambda d: d.name)
    print("all runs:", figures(runs))
    print("half A (even):", figures(runs[0::2]))
    print("half B (odd):", figures(runs[1::2]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
