"""Fixture builders for the plot tests: real (short) runs and hand-written sweeps."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from prunesim.io.results import write_run
from prunesim.io.scenario_files import load
from prunesim.io.sweep_files import ID_COLUMNS
from prunesim.runner import run_one


def make_run(tmp: Path, name: str, policy: str = "naive", seed: int = 3, overrides: dict | None = None) -> Path:
    sc = load("oscillation-40", overrides)
    path = tmp / name
    write_run(run_one(sc, policy, seed, trace="all"), path)
    return path


def read_rows(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def write_rows(path: Path, rows: list[dict], columns: list[str]) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=columns, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def add_event(run_dir: Path, time_s: float, turn: int, event: str, detail: dict) -> None:
    rows = read_rows(run_dir / "events.csv")
    rows.append({"seq": len(rows) + 1, "time_s": time_s, "turn": turn, "event": event,
                 "detail": json.dumps(detail, sort_keys=True)})
    write_rows(run_dir / "events.csv", rows, ["seq", "time_s", "turn", "event", "detail"])


TRIGGERS = [20000, 21000, 22000, 23000, 23500]
PER_SPAN = [60, 120]
POLICIES = ["naive", "slack-gated"]
SEEDS = [0, 1, 2]


def metrics_for(policy: str, trigger: int, per_span: int, seed: int) -> dict:
    """Made-up but structured numbers: naive oscillates when headroom < overhead."""
    index = 600
    rationale = 40 + 3 * per_span
    in_band = 24000 - trigger < index + rationale
    naive = policy == "naive"
    return {
        "passes": (11 + seed if in_band else 5 + seed) if naive else 3 + seed % 2,
        "oscillating": bool(naive and in_band and seed != 2),
        "net_negative_passes": (2 + seed if in_band else 0) if naive else 0,
        "mean_index_tokens": index + 10 * seed,
        "mean_rationale_tokens": rationale - 10 * seed,
        "overhead_ratio": "inf" if (naive and in_band and seed < 2) else round(0.5 + trigger / 20000 + seed / 10, 3),
    }


GATE_LEAD = 2086  # slack-gated acts this far below the trigger in the acting-trigger fixture


def make_sweep(tmp: Path, aggregate: bool = False, acting: bool = False) -> Path:
    """A sweep over trigger x rationale_per_span; ``acting`` adds runs.csv's acting_trigger column."""
    path = tmp / "sweep"
    path.mkdir(parents=True, exist_ok=True)
    grid = {"trigger": TRIGGERS, "decision.rationale_per_span": PER_SPAN}
    meta = {
        "format": 1,
        "scenario_name": "oscillation-40",
        "scenario": load("oscillation-40").to_dict(),  # as a sweep writes it: the resolved scenario
        "grid": grid,
        "policies": POLICIES,
        "seeds": SEEDS,
        "overrides": {},
        "prunesim_version": "0.1.0",
        "columns": [*ID_COLUMNS, *grid, *(["acting_trigger"] if acting else []), *metrics_for("naive", 20000, 60, 0)],
    }
    (path / "sweep.json").write_text(json.dumps(meta))
    rows, run_id = [], 0
    for policy in POLICIES:
        for trigger in TRIGGERS:
            for per_span in PER_SPAN:
                for seed in SEEDS:
                    run_id += 1
                    m = metrics_for(policy, trigger, per_span, seed)
                    rows.append({"run_id": f"{run_id:016x}", "scenario": "oscillation-40", "policy": policy,
                                 "seed": seed, "prunesim_version": "0.1.0", "trigger": trigger,
                                 "decision.rationale_per_span": per_span,
                                 **({"acting_trigger": trigger - (GATE_LEAD if policy == "slack-gated" else 0)}
                                    if acting else {}),
                                 **{k: (str(v).lower() if isinstance(v, bool) else v) for k, v in m.items()}})
    write_rows(path / "runs.csv", rows, list(rows[0]))
    if aggregate:
        agg = []
        for policy in POLICIES:
            for trigger in TRIGGERS:
                for per_span in PER_SPAN:
                    agg.append({"policy": policy, "trigger": trigger, "decision.rationale_per_span": per_span,
                                "metric": "passes", "n": 3, "median": 100 + trigger / 1000, "mean": 0,
                                "ci_low": 90, "ci_high": 130, "share": "", "share_low": "", "share_high": ""})
        write_rows(path / "aggregate.csv", agg, list(agg[0]))
    return path


LB_UNITS = 10


def leaderboard_values(policy: str, setting: str = "") -> list[dict]:
    """Per-unit figures: three policies that coincide at (1, 0), one that saves tokens and breaks a few units."""
    keep = {"": 4, "masking.keep=2": 2, "masking.keep=8": 8}[setting] if policy == "masking" else 0
    rows = []
    for i in range(LB_UNITS):
        if policy == "masking":
            ratio, repeats = 0.4 + 0.05 * keep + 0.01 * i, ([0] * 7 + [1, 2, 3])[i] * (1 if keep < 8 else 0)
        else:
            ratio, repeats = 1.0, 0
        rows.append({"unit": f"u{i}", "policy": policy, "setting": setting, "turns": 30, "input_ratio": ratio,
                     "re_retrievals": repeats, "acted": int(policy != "noop" and (policy != "naive" or i < 3))})
    return rows


def make_leaderboard(tmp: Path, settings: bool = False) -> Path:
    """A leaderboard folder as ``prunesim leaderboard`` writes it; ``settings`` adds a policy's other settings
    (the setting and acting_threshold columns)."""
    from prunesim.plots.stats import bootstrap_median

    path = tmp / "lb"
    path.mkdir(parents=True, exist_ok=True)
    cells = [("noop", ""), ("recency", ""), ("naive", ""), ("masking", "")]
    if settings:
        cells += [("masking", "masking.keep=2"), ("masking", "masking.keep=8")]
    thresholds = {"": 16000, "masking.keep=2": 8000, "masking.keep=8": 24000}
    units, table = [], []
    for policy, setting in cells:
        rows = leaderboard_values(policy, setting)
        units += rows
        for figure in ("input_ratio", "re_retrievals", "acted"):
            values = [float(r[figure]) for r in rows]
            median, low, high = bootstrap_median(values)
            row = {"policy": policy, "figure": figure, "n": len(values), "median": median,
                   "mean": sum(values) / len(values), "ci_low": low, "ci_high": high}
            if settings:
                row = {"policy": policy, "setting": setting, **row, "acting_threshold": thresholds[setting]}
            table.append(row)
    unit_columns = ["unit", "policy", *(["setting"] if settings else []), "turns", "input_ratio", "re_retrievals",
                    "acted"]
    write_rows(path / "runs.csv", [{c: r[c] for c in unit_columns} for r in units], unit_columns)
    write_rows(path / "leaderboard.csv", table, list(table[0]))
    meta = {"source": str(tmp / "transcripts"), "units": LB_UNITS, "scenario": {"name": "transcript"},
            "figures": {"input_ratio": {"unit": "ratio", "definition": "input tokens / noop's"},
                        "re_retrievals": {"unit": "runs", "definition": "repeats after a prune"},
                        "acted": {"unit": "bool", "definition": "1 when the policy acted"}}}
    (path / "leaderboard.json").write_text(json.dumps(meta))
    return path
