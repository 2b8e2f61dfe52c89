"""Dollars against noop, paired: the figure a decision is read from, and the results it is drawn from.

Each policy's total dollars over the units minus noop's on the same units, with the
95% interval of that paired difference: from ``recommend.json`` as ``prunesim
recommend`` computed it, or from a leaderboard's ``runs.csv`` (each unit's
``cost_usd`` against noop's on that unit, the units resampled whole:
:func:`prunesim.plots.stats.bootstrap_sum`). A point left of zero saves; an
interval that crosses zero is a tie, whatever its point says.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from prunesim.errors import UserError
from prunesim.io.labels import policy_labels
from prunesim.plots import style
from prunesim.plots.io import read_json
from prunesim.plots.stats import bootstrap_sum

RECOMMEND_FILE = "recommend.json"
REFERENCE = "noop"
DOCUMENTED = ""  # a leaderboard row's setting when the policy ran as documented


@dataclass(frozen=True)
class Paired:
    """One policy against noop: total dollars, the difference of totals and its interval, on acted units W/L/T."""

    policy: str
    total: float
    diff: float
    low: float
    high: float
    wins: int | None = None
    losses: int | None = None
    ties: int | None = None
    acted: float | None = None


def read_recommendation(path: Path) -> dict:
    """``recommend.json`` of a folder (or the file itself), checked for what the report reads."""
    file = path / RECOMMEND_FILE if path.is_dir() else path
    data = read_json(file)
    for key in ("recommendation", "policies", "assumptions", "draws", "objective"):
        if key not in data:
            raise UserError(str(file), key, "missing: not a recommend.json")
    return data


def from_recommendation(data: dict) -> list[Paired]:
    out = []
    for p in data["policies"]:
        d = p["diff_vs_noop"]
        out.append(Paired(p["policy"], p["total_usd"], d["diff_usd"], d["interval"][0], d["interval"][1],
                          p.get("wins"), p.get("losses"), p.get("ties"), p.get("acted_share")))
    return out


def from_leaderboard_runs(units: list[dict], tie_share: float = 0.001) -> list[Paired]:
    """Each policy's documented-setting row against noop's on the same units of a leaderboard's runs.csv."""
    rows = [r for r in units if (r.get("setting") or DOCUMENTED) == DOCUMENTED and r.get("cost_usd") is not None]
    noop = {r["unit"]: float(r["cost_usd"]) for r in rows if r["policy"] == REFERENCE}
    if not noop:
        return []
    out = []
    for policy in dict.fromkeys(r["policy"] for r in rows):
        mine = [r for r in rows if r["policy"] == policy and r["unit"] in noop]
        cost = np.array([float(r["cost_usd"]) for r in mine])
        ref = np.array([noop[r["unit"]] for r in mine])
        acted = np.array([bool(r.get("acted")) for r in mine])
        diff = cost - ref
        total, low, high = bootstrap_sum(diff)
        tol = tie_share * ref
        out.append(Paired(policy, float(cost.sum()), total, low, high, int((diff[acted] < -tol[acted]).sum()),
                          int((diff[acted] > tol[acted]).sum()), int((np.abs(diff[acted]) <= tol[acted]).sum()),
                          float(acted.mean()) if len(acted) else None))
    return out


def paired_figure(rows: list[Paired], title: str = "dollars against noop on the same units, paired"):
    """One row per policy: the total difference from noop and its 95% interval (dollars)."""
    shown = [r for r in rows if r.policy != REFERENCE]
    fig, axes = style.new_figure(size=(style.WIDE[0], max(2.4, 0.32 * len(shown) + 1.2)))
    ax = axes[0][0]
    names = policy_labels([r.policy for r in shown])
    with style.rc():
        for i, r in enumerate(shown):
            ties = r.low <= 0 <= r.high
            colour = style.GREY if ties else (style.OKABE_ITO[2] if r.high < 0 else style.OKABE_ITO[3])
            ax.plot([r.low, r.high], [i, i], color=colour, lw=2)
            ax.plot([r.diff], [i], "o", color=colour, ms=4)
        ax.axvline(0, color="#000000", lw=0.8)
        ax.set_yticks(range(len(shown)), [names[r.policy] for r in shown])
        ax.invert_yaxis()
        ax.set_xlabel("dollars minus noop's, 95% paired interval (grey: crosses 0)")
        ax.set_title(style.wrapped(title))
    return fig
