"""Dollars against noop, paired: the figure a decision is read from, and the results it is drawn from.

Each policy's total dollars over the units minus noop's on the same units, with the
95% interval of that paired difference, as the command that wrote the result
computed it: ``recommend.json``'s ``diff_vs_noop``, or ``leaderboard.json``'s
``paired``. A point left of zero saves; an interval that crosses zero is a tie,
whatever its point says.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prunesim.errors import UserError
from prunesim.io.labels import policy_labels
from prunesim.plots import style
from prunesim.plots.io import read_json

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


def from_leaderboard(meta: dict) -> list[Paired]:
    """The documented rows of ``leaderboard.json``'s ``paired`` (as ``prunesim leaderboard`` computed them; a
    leaderboard written before it recorded them has none)."""
    out = []
    for p in meta.get("paired") or []:
        if (p.get("setting") or DOCUMENTED) != DOCUMENTED:
            continue
        acted = p["acted"] / p["units"] if p.get("units") else None
        out.append(Paired(p["policy"], p["total_usd"], p["diff_usd"], p["interval"][0], p["interval"][1],
                          p["wins"], p["losses"], p["ties"], acted))
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
