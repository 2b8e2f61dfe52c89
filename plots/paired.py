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
    for i, p in enumerate(_rows(data["policies"], f"{file}", "policies")):
        where = f"policies[{i}]"
        _number_keys(p, ("total_usd", "p_best"), file, where)
        d = p.get("diff_vs_noop")
        if not isinstance(d, dict) or not _pair(d.get("interval")):
            raise UserError(str(file), f"{where}.diff_vs_noop", "must hold diff_usd and an interval of two numbers")
        _number_keys(d, ("diff_usd",), file, f"{where}.diff_vs_noop")
        if not _pair(p.get("rank_interval")):
            raise UserError(str(file), f"{where}.rank_interval", "must be two numbers")
    for i, a in enumerate(_rows(data["assumptions"], f"{file}", "assumptions")):
        if not isinstance(a.get("name"), str):
            raise UserError(str(file), f"assumptions[{i}].name", "must be text")
    return data


def _rows(value, file: str, key: str) -> list[dict]:
    if not isinstance(value, list) or not all(isinstance(r, dict) and isinstance(r.get("policy", ""), str)
                                              for r in value):
        raise UserError(file, key, "must be a list of objects")
    return value


def _number_keys(row: dict, keys, file, where: str) -> None:
    for key in keys:
        value = row.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UserError(str(file), f"{where}.{key}", f"must be a number (got {value!r})")


def _pair(value) -> bool:
    return (isinstance(value, list) and len(value) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value))


def from_recommendation(data: dict) -> list[Paired]:
    out = []
    for p in data["policies"]:
        d = p["diff_vs_noop"]
        out.append(Paired(p["policy"], p["total_usd"], d["diff_usd"], d["interval"][0], d["interval"][1],
                          p.get("wins"), p.get("losses"), p.get("ties"), p.get("acted_share")))
    return out


def from_leaderboard(meta: dict, file: str = "leaderboard.json") -> list[Paired]:
    """The documented rows of ``leaderboard.json``'s ``paired`` (as ``prunesim leaderboard`` computed them; a
    leaderboard written before it recorded them has none)."""
    out = []
    for i, p in enumerate(_rows(meta.get("paired") or [], file, "paired")):
        if (p.get("setting") or DOCUMENTED) != DOCUMENTED:
            continue
        _number_keys(p, ("total_usd", "diff_usd", "wins", "losses", "ties", "acted", "units"), file, f"paired[{i}]")
        if not _pair(p.get("interval")):
            raise UserError(file, f"paired[{i}].interval", "must be two numbers")
        acted = p["acted"] / p["units"] if p["units"] else None
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
