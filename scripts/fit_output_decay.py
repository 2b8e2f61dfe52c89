"""Fit the early factor of tool-output sizes on real transcripts (the oscillation-40 workload's decay).

    python scripts/fit_output_decay.py [--traces ../shared/traces] [--folder mini-swe-agent-dev]

Seed 000's condition 4, "stale-trace scarcity", needs tool outputs that are
large early in a run and smaller later. This measures it on the transcripts of
one folder: each tool output's size in tokens (prunesim's default counter) at
the turn it arrives, and a least-squares fit of its mean at turn t,

    mean(t) = base * (1 + early * exp(-(t - 1) / early_turns)),

pooled over the runs. Judged out of sample: a bootstrap over runs for the
spread of ``early`` and ``early_turns``, and k folds over runs in which the fit
on the other folds predicts the held-out runs' outputs, against a flat mean
fitted the same way. It also prints the mean tokens of one turn (reasoning,
call and output together), the unit a pass evicts under ``workload.turn_unit``.
The scenario's comments record what it printed; the transcripts are read where
they lie and nothing of them is written.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
from prunesim.io.transcripts import tokens
from prunesim.io.transcripts.formats import iter_transcripts
from prunesim.studies.transcript_replay import expand
from scipy.optimize import curve_fit

BOOTSTRAPS = 200
FOLDS = 6


def mean_at(t, base, early, early_turns):
    return base * (1 + early * np.exp(-(t - 1) / early_turns))


def runs_of(folder: Path):
    """Per run: (turns, output tokens) arrays, and the mean tokens of one whole turn."""
    count = tokens.get_counter(tokens.DEFAULT)
    runs, per_turn = [], []
    for path in expand([folder]):
        for t in iter_transcripts(path):
            outputs = [(p.turn, p.tokens if p.tokens is not None else count(p.text))
                       for p in t.parts if p.kind == "tool_output" and p.turn >= 1]
            if not outputs:
                continue
            runs.append(np.array(outputs, dtype=float).T)
            turn_tokens: dict[int, int] = {}
            for p in t.parts:
                if p.turn >= 1 and p.kind in ("reasoning", "tool_call", "tool_output"):
                    turn_tokens[p.turn] = turn_tokens.get(p.turn, 0) + (p.tokens or count(p.text))
            per_turn.extend(turn_tokens.values())
    return runs, float(np.mean(per_turn))


def fit(runs) -> np.ndarray:
    t = np.concatenate([r[0] for r in runs])
    y = np.concatenate([r[1] for r in runs])
    params, _ = curve_fit(mean_at, t, y, p0=(y.mean(), 1.0, 5.0), bounds=([1, 0, 0.1], [1e5, 50, 60]), maxfev=20000)
    return params


def main() -> None:
    default = os.environ.get("PRUNESIM_TRACES") or Path(__file__).resolve().parents[2] / "shared" / "traces"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=Path(default))
    parser.add_argument("--folder", default="mini-swe-agent-dev")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    runs, turn_mean = runs_of(args.traces / args.folder)
    rng = np.random.default_rng(args.seed)
    outputs = sum(len(r[0]) for r in runs)
    base, early, early_turns = fit(runs)
    print(f"{args.folder}: {len(runs)} runs, {outputs} tool outputs (tokens: {tokens.DEFAULT})")
    print(f"fit, all runs: mean(t) = {base:.1f} x (1 + {early:.3f} exp(-(t - 1) / {early_turns:.3f}))")
    fifths = np.concatenate([np.floor(5 * (r[0] - 1) / r[0].max()).clip(0, 4) for r in runs])
    sizes = np.concatenate([r[1] for r in runs])
    print("mean output by fifth of the run: " + ", ".join(f"{sizes[fifths == k].mean():.0f}" for k in range(5)))
    boot = np.array([fit([runs[i] for i in rng.integers(0, len(runs), len(runs))]) for _ in range(BOOTSTRAPS)])
    lo, hi = np.percentile(boot, [5, 95], axis=0)
    print(f"bootstrap over runs ({BOOTSTRAPS}), 5..95%: base {lo[0]:.0f}..{hi[0]:.0f}, early {lo[1]:.2f}..{hi[1]:.2f}, "
          f"early_turns {lo[2]:.2f}..{hi[2]:.2f}")
    order = rng.permutation(len(runs))
    err_decay = err_flat = 0.0
    for k in range(FOLDS):
        held = [runs[i] for i in order[k::FOLDS]]
        train = [runs[i] for i in order if i not in set(order[k::FOLDS])]
        params = fit(train)
        flat = np.concatenate([r[1] for r in train]).mean()
        for t, y in held:
            err_decay += float(((y - mean_at(t, *params)) ** 2).sum())
            err_flat += float(((y - flat) ** 2).sum())
    print(f"{FOLDS} folds over runs, held-out squared error: decaying {err_decay:.4g}, flat {err_flat:.4g} "
          f"({100 * (1 - err_decay / err_flat):.1f}% lower)")
    print(f"mean tokens of one turn (reasoning + call + output): {turn_mean:.0f}")


if __name__ == "__main__":
    main()
