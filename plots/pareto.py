"""A leaderboard's cost against what it breaks: one point per policy, with its intervals.

Reads ``leaderboard.csv`` (and, beside it, ``leaderboard.json`` for the axis
definitions and what was run). Each policy is a point at the medians of two
figures (by default ``input_ratio`` across and ``re_retrievals`` up) with its
bootstrap 95% intervals as error bars on both axes. Policies of the same family
(the part of the name before ``:``) share a colour.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from prunesim.errors import UserError, from_os_error
from prunesim.io.sweep_files import parse_json
from prunesim.plots import style
from prunesim.plots.io import read_csv

TABLE_FILE = "leaderboard.csv"
META_FILE = "leaderboard.json"
COLUMNS = ("policy", "figure", "n", "median", "ci_low", "ci_high")
MARKERS = ("o", "s", "^", "D", "v", "P")
# More families than Okabe-Ito has colours: grey, brown and purple after them.
FAMILY_COLOURS = style.OKABE_ITO + ("#777777", "#8C564B", "#7F3C8D")


@dataclass
class Leaderboard:
    path: Path
    rows: list[dict]
    meta: dict

    def figures(self) -> list[str]:
        return list(dict.fromkeys(r["figure"] for r in self.rows))

    def policies(self) -> list[str]:
        return list(dict.fromkeys(r["policy"] for r in self.rows))

    def point(self, policy: str, figure: str) -> tuple[float, float, float] | None:
        for r in self.rows:
            if r["policy"] == policy and r["figure"] == figure and not r.get("setting"):
                # A count's interval is its mean's (leaderboard.csv's interval column): the point is the mean.
                centre = r["mean"] if r.get("interval") in ("mean", "wilson") else r["median"]
                return float(centre), float(r["ci_low"]), float(r["ci_high"])
        return None


def read_leaderboard(path) -> Leaderboard:
    """``leaderboard.csv``, given as the file or the folder that holds it."""
    path = Path(path)
    if path.is_dir():
        path = path / TABLE_FILE
    if not path.is_file():
        raise UserError(str(path), None, "no such leaderboard (run prunesim leaderboard ... --out DIR first)")
    rows = read_csv(path)
    if not rows:
        raise UserError(str(path), None, "no rows")
    missing = [c for c in COLUMNS if c not in rows[0]]
    if missing:
        raise UserError(str(path), missing[0], "missing column: not a leaderboard.csv")
    for i, r in enumerate(rows, 2):
        for c in ("median", "ci_low", "ci_high"):
            if not isinstance(r[c], (int, float)) or isinstance(r[c], bool):
                raise UserError(f"{path}:{i}", c, f"not a number ({r[c]!r})")
    meta_file = path.parent / META_FILE
    meta = {}
    if meta_file.is_file():
        try:
            raw = meta_file.read_bytes()
        except OSError as err:
            raise from_os_error(err, meta_file) from None
        meta = parse_json(raw, meta_file)  # bad UTF-8, bad JSON or deep nesting: one line naming the file
    return Leaderboard(path, rows, meta if isinstance(meta, dict) else {})


def pareto_figure(board: Leaderboard, x: str = "input_ratio", y: str = "re_retrievals"):
    known = board.figures()
    for flag, figure in (("--x", x), ("--y", y)):
        if figure not in known:
            raise UserError(flag, figure, f"not a figure of this leaderboard (known: {', '.join(known)})")
    fig, axes = style.new_figure(size=(10.0, 6.0))
    ax = axes[0][0]
    families = list(dict.fromkeys(p.split(":")[0] for p in board.policies()))
    seen: dict[str, int] = {}
    skipped = []
    for policy in board.policies():
        px, py = board.point(policy, x), board.point(policy, y)
        if px is None or py is None or not all(map(math.isfinite, (*px, *py))):
            skipped.append(policy)
            continue
        family = policy.split(":")[0]
        colour = FAMILY_COLOURS[families.index(family) % len(FAMILY_COLOURS)]
        marker = MARKERS[seen.get(family, 0) % len(MARKERS)]  # presets of one family: one colour, their own marker
        seen[family] = seen.get(family, 0) + 1
        ax.errorbar([px[0]], [py[0]], xerr=[[px[0] - px[1]], [px[2] - px[0]]], yerr=[[py[0] - py[1]], [py[2] - py[0]]],
                    fmt=marker, color=colour, ecolor=colour, elinewidth=1, capsize=3, markersize=6, alpha=0.9,
                    label=policy)
    lo, hi = ax.get_ylim()
    if hi - lo < 1:  # every point at one count (all zero, say): show a unit of the axis, not noise
        ax.set_ylim(min(lo, -0.1), max(hi, 1.0))
    style.legend_outside(ax)
    definitions = board.meta.get("figures", {}) if isinstance(board.meta.get("figures"), dict) else {}
    ax.set_xlabel(_label(x, definitions))
    ax.set_ylabel(_label(y, definitions))
    if skipped:
        ax.text(0.0, -0.12, f"not drawn (no finite value): {', '.join(skipped)}", transform=ax.transAxes, fontsize=7)
    units = board.meta.get("units")
    source = Path(board.meta["source"]).name if board.meta.get("source") else _scenario_name(board.meta)
    title = "cost against breakage, one point per policy: median and bootstrap 95% interval"
    if units:
        scenario = _scenario_name(board.meta)
        what = f"transcripts in {source}, scenario {scenario}" if board.meta.get("source") else f"seeds of {source}"
        title += f"\nover {units} {what}"
    ax.set_title(title)
    return fig


def _label(figure: str, definitions: dict) -> str:
    entry = definitions.get(figure)
    unit = entry.get("unit") if isinstance(entry, dict) else None
    return f"{figure} ({unit})" if unit else figure


def _scenario_name(meta: dict) -> str:
    scenario = meta.get("scenario")
    return str(scenario.get("name", "?")) if isinstance(scenario, dict) else "?"
