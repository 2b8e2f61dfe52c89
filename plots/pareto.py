"""A leaderboard's cost against what it breaks: one point per policy, labelled, with its intervals.

Reads ``leaderboard.csv`` (and, beside it, ``leaderboard.json`` for the axis
definitions and ``runs.csv`` for the per-unit figures). What a point is, per
axis (``stat="auto"``): for a ratio or a size (units ``ratio``, ``tokens``,
``USD``) the median over the units with the leaderboard's bootstrap 95%
interval; for a count (re-retrievals, lost constraints: mostly zeros, so a
median and its interval sit at [0, 0]) the mean per unit with a bootstrap 95%
interval of the mean; for a yes/no figure (``acted``) the share of units with
its Wilson 95% interval. ``stat`` may name one of them for both axes. Without
``runs.csv`` (a folder with the table only) every axis is the table's medians.

Every point carries its policy's name. Policies whose points coincide (within
``CLOSE`` of either axis' range) are drawn around their common place, each
marker its own colour and shape, under one label that names them all; their
error bars stay at the true value. Policies of one family (the part of the
name before ``:``) share a colour and differ by marker.

A leaderboard may hold several settings of a policy (its ``setting`` column:
empty for the documented setting, else ``key=value[,key=value]``, with the
``acting_threshold`` in tokens). The documented settings are the points; with
``frontier=True`` each policy with several settings also gets its frontier: a
line through its settings in the order of their acting threshold, each
setting's threshold written beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from matplotlib import transforms
from prunesim.errors import UserError, from_os_error
from prunesim.io.labels import policy_labels
from prunesim.io.sweep_files import parse_json
from prunesim.plots import placement, style
from prunesim.plots.io import as_float, read_csv
from prunesim.plots.stats import summarize

TABLE_FILE = "leaderboard.csv"
META_FILE = "leaderboard.json"
UNITS_FILE = "runs.csv"
COLUMNS = ("policy", "figure", "n", "median", "ci_low", "ci_high")
MEDIAN_UNITS = ("ratio", "tokens", "USD", "turns", "s")  # sizes and ratios: the median is the figure
STATS = ("auto", "median", "mean", "share")
CLOSE = 0.07  # of an axis' range: points nearer than this on both axes are drawn as one group
FAN = 4.5  # points: a group's markers sit on a circle of FAN + FAN_PER * (size of the group) points
FAN_PER = 1.3
DOCUMENTED = ""  # the setting column's value for a policy's documented setting


UNIT_TEXT = ("unit", "policy", "setting", "model", "price_table", "not_recorded")  # runs.csv's columns of words
TABLE_TEXT = ("policy", "setting", "figure", "interval")  # leaderboard.csv's


@dataclass
class Leaderboard:
    path: Path
    rows: list[dict]
    meta: dict
    units_file: Path | None = None  # runs.csv beside the table: one row per unit, policy (and setting)
    _units: list[dict] | None = field(default=None, repr=False)

    @property
    def units(self) -> list[dict]:
        """runs.csv's rows, read when a figure first needs them (a median needs only the table)."""
        if self._units is None:
            rows = (read_csv(self.units_file, text=UNIT_TEXT)
                    if self.units_file is not None and self.units_file.is_file() else [])
            if rows and "policy" not in rows[0]:
                raise UserError(str(self.units_file), "policy", "missing column: not a leaderboard's runs.csv")
            _check_names(rows, ("unit", "policy"), self.units_file)
            self._units = rows
        return self._units

    def figures(self) -> list[str]:
        return list(dict.fromkeys(r["figure"] for r in self.rows))

    def policies(self) -> list[str]:
        return list(dict.fromkeys(r["policy"] for r in self.rows))

    def settings(self, policy: str) -> list[str]:
        return list(dict.fromkeys(str(r.get("setting") or DOCUMENTED) for r in self.rows if r["policy"] == policy))

    def threshold(self, policy: str, setting: str) -> float | None:
        for r in self._rows(policy, setting):
            v = r.get("acting_threshold")
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                return float(v)
        return None

    def _rows(self, policy: str, setting: str) -> list[dict]:
        return [r for r in self.rows if r["policy"] == policy and str(r.get("setting") or DOCUMENTED) == setting]

    def unit(self, figure: str) -> str | None:
        entry = self.meta.get("figures", {}).get(figure) if isinstance(self.meta.get("figures"), dict) else None
        return entry.get("unit") if isinstance(entry, dict) else None

    def stat_for(self, figure: str, stat: str = "auto") -> str:
        """The statistic an axis of ``figure`` shows (see the module docstring)."""
        unit = self.unit(figure)
        wanted = stat if stat != "auto" else "share" if unit == "bool" else (
            "median" if unit in MEDIAN_UNITS or unit is None else "mean")
        if wanted == "median" or not self.units or figure not in self.units[0]:
            return "median"
        if "setting" not in self.units[0] and any(len(self.settings(p)) > 1 for p in self.policies()):
            return "median"  # runs.csv cannot tell one setting's units from another's: the table's figures
        return wanted

    def point(self, policy: str, figure: str, stat: str = "median", setting: str = DOCUMENTED):
        """(value, low, high) of ``figure`` for ``policy`` at ``setting``, or None when the file has none."""
        if stat == "median":
            for r in self._rows(policy, setting):
                if r["figure"] == figure:
                    return float(r["median"]), float(r["ci_low"]), float(r["ci_high"])
            return None
        values = [as_float(u[figure]) for u in self.units if u.get("policy") == policy
                  and str(u.get("setting") or DOCUMENTED) == setting and u.get(figure) is not None]
        values = [v for v in values if not math.isnan(v)]
        return summarize(values, stat) if values else None
def read_leaderboard(path) -> Leaderboard:
    """``leaderboard.csv``, given as the file or the folder that holds it."""
    path = Path(path)
    if path.is_dir():
        path = path / TABLE_FILE
    if not path.is_file():
        raise UserError(str(path), None, "no such leaderboard (run prunesim leaderboard ... --out DIR first)")
    rows = read_csv(path, text=TABLE_TEXT)
    if not rows:
        raise UserError(str(path), None, "no rows")
    missing = [c for c in COLUMNS if c not in rows[0]]
    if missing:
        raise UserError(str(path), missing[0], "missing column: not a leaderboard.csv")
    _check_names(rows, ("policy", "figure"), path)
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
    return Leaderboard(path, rows, meta if isinstance(meta, dict) else {}, path.parent / UNITS_FILE)


def _check_names(rows: list[dict], columns: tuple[str, ...], path: Path) -> None:
    """Each row names its policy (and figure, or unit): an empty cell, read as None, would leave the row out of
    every figure without a word, and a number is no name."""
    for i, r in enumerate(rows, 2):
        for c in columns:
            if c in r and (not isinstance(r[c], str) or not r[c].strip()):
                raise UserError(f"{path}:{i}", c, f"not a name ({'empty' if r[c] in (None, '') else repr(r[c])})")


def _groups(points: dict, xr: float, yr: float) -> list[list[str]]:
    """Policies whose points lie within ``CLOSE`` of each other's on both axes, in drawing order."""
    groups: list[list[str]] = []
    for name, (px, py) in points.items():
        for g in groups:
            gx, gy = points[g[0]]
            if abs(px[0] - gx[0]) <= CLOSE * xr and abs(py[0] - gy[0]) <= CLOSE * yr:
                g.append(name)
                break
        else:
            groups.append([name])
    return groups


MARKER = 6.5  # points: a policy's marker
LABEL = {"fontsize": style.SMALL, "zorder": 5,
         "bbox": {"boxstyle": "round,pad=0.15", "fc": "white", "ec": "#bbbbbb", "lw": 0.5, "alpha": 0.85}}
DODGE = 5.0  # points between the error bars of policies drawn at one x


def _dodge(points: dict, alone: list[str], xr: float) -> dict[str, float]:
    """{policy: sideways offset in points} for policies drawn alone whose x lies within 1% of the range of
    another's (most policies at cost_ratio 1.00): their vertical error bars side by side, not on one line.
    Ordered by y, so that the offsets read bottom to top; the note under the plot says they are set apart."""
    out: dict[str, float] = {}
    left = sorted(alone, key=lambda p: points[p][0][0])
    while left:
        x0 = points[left[0]][0][0]
        column = [p for p in left if abs(points[p][0][0] - x0) <= 0.01 * xr]
        left = [p for p in left if p not in column]
        if len(column) > 1:
            column.sort(key=lambda p: points[p][1][0])
            for k, p in enumerate(column):
                out[p] = (k - (len(column) - 1) / 2) * DODGE
    return out


def _names_text(names: list[str], per_line: int = 3) -> str:
    lines = [", ".join(names[i:i + per_line]) for i in range(0, len(names), per_line)]
    return "\n".join(lines)


def pareto_figure(board: Leaderboard, x: str = "input_ratio", y: str = "re_retrievals", stat: str = "auto",
                  frontier: bool = False):
    """The figure; ``stat`` chooses what a point is (module docstring), ``frontier`` draws every setting."""
    known = board.figures()
    hidden = board.meta.get("unobservable") if isinstance(board.meta.get("unobservable"), dict) else {}
    for flag, figure in (("--x", x), ("--y", y)):
        if figure in hidden:
            raise UserError(flag, figure, f"unobservable in this leaderboard, so left out: {hidden[figure]} "
                            f"(known: {', '.join(known)})")
        if figure not in known:
            raise UserError(flag, figure, f"not a figure of this leaderboard (known: {', '.join(known)})")
    if stat not in STATS:
        raise UserError("--stat", stat, f"unknown statistic (known: {', '.join(STATS)})")
    xs, ys = board.stat_for(x, stat), board.stat_for(y, stat)
    fig, axes = style.new_figure(size=style.WIDE)
    ax = axes[0][0]
    policies = board.policies()
    names = policy_labels(policies)
    look = {p: (c, m) for p, (c, m, _) in style.family_looks(policies).items()}
    points, skipped, hidden = {}, [], 0
    for policy in policies:
        settings = board.settings(policy)
        main = DOCUMENTED if DOCUMENTED in settings else settings[0]
        hidden += len(settings) - 1
        px, py = board.point(policy, x, xs, main), board.point(policy, y, ys, main)
        if px is None or py is None or not all(map(math.isfinite, (*px, *py))):
            skipped.append(names[policy])
            continue
        points[policy] = (px, py)
    with style.rc():
        thresholds = []  # the frontiers' labels, placed after the points'
        if frontier:
            hidden, thresholds = _draw_frontiers(ax, board, x, y, xs, ys, look)
        xr = _range([p[0] for p in points.values()])
        yr = _range([p[1] for p in points.values()])
        groups = _groups(points, xr, yr)
        dodge = _dodge(points, [g[0] for g in groups if len(g) == 1], xr)
        for policy, (px, py) in points.items():
            c, _ = look[policy]
            shifted = transforms.offset_copy(ax.transData, fig=fig, x=dodge.get(policy, 0.0), units="points")
            ax.errorbar([px[0]], [py[0]], xerr=[[px[0] - px[1]], [px[2] - px[0]]],
                        yerr=[[py[0] - py[1]], [py[2] - py[0]]], fmt="none", ecolor=c, elinewidth=1.0,
                        capsize=3, alpha=0.8, zorder=2, transform=shifted)
            # Artists drawn with an offset are not counted by autoscaling: the intervals' corners are.
            ax.update_datalim([(px[1], py[1]), (px[2], py[2])])
        ax.autoscale_view()
        noun = "transcript" if board.meta.get("source") else "seed"
        handles, requests = {}, []
        for group in groups:
            radius = 0.0 if len(group) == 1 else FAN + FAN_PER * len(group)
            for k, policy in enumerate(group):
                c, marker = look[policy]
                angle = math.pi / 2 - 2 * math.pi * k / len(group)  # clockwise from the top
                where = transforms.offset_copy(ax.transData, fig=fig, x=radius * math.cos(angle) + dodge.get(policy, 0),
                                               y=radius * math.sin(angle), units="points")
                px, py = points[policy]
                # Not clipped: a group's circle at the edge of the data would be cut by the axes.
                (handles[policy],) = ax.plot([px[0]], [py[0]], marker=marker, ms=MARKER, color=c, mec="black",
                                             mew=0.6, ls="none", transform=where, zorder=4, gid=f"point:{policy}",
                                             clip_on=False)
            px, py = points[group[0]]
            centre = transforms.offset_copy(ax.transData, fig=fig, x=dodge.get(group[0], 0.0), units="points")
            text = names[group[0]] if len(group) == 1 else f"{len(group)} policies (key at right)"
            # On two lines where one is too long: a family's name over its preset's, the count over the key.
            two = text.replace(":", ":\n", 1) if len(group) == 1 else text.replace(" (", "\n(", 1)
            requests.append(placement.Request(text, (px[0], py[0]), centre, radius + MARKER / 2,
                                              own=tuple(handles[p] for p in group),
                                              variants=(two,) if two != text else (),
                                              props={**LABEL, "gid": f"label:{'|'.join(group)}"}))
        lo, hi = ax.get_ylim()
        if hi - lo < 1 and ys != "share":  # every point at one count (all zero, say): show a unit of the axis
            ax.set_ylim(min(lo, -0.1), max(hi, 1.0))
        if ys == "share":
            ax.set_ylim(-0.05, 1.05)
        ax.margins(x=0.12)
        ax.set_xlim(ax.get_xlim())  # the limits are final before the labels are placed within them
        ax.set_ylim(ax.get_ylim())
        definitions = board.meta.get("figures", {}) if isinstance(board.meta.get("figures"), dict) else {}
        ax.set_xlabel(_label(x, definitions, xs, noun))
        ax.set_ylabel(_label(y, definitions, ys, noun))
        notes = []
        if skipped:
            notes.append(f"not drawn (no finite value): {', '.join(skipped)}")
        if dodge:
            notes.append(f"policies at one x are set {DODGE:g} pt apart, so that each interval shows")
        if hidden and not frontier:
            notes.append(f"{hidden} other setting(s) not drawn (--frontier draws each policy's)")
        units = board.meta.get("units")
        source = Path(board.meta["source"]).name if board.meta.get("source") else _scenario_name(board.meta)
        title = f"{y} against {x}, with 95% intervals"  # the axes' labels say which statistic
        if units:
            scenario = _scenario_name(board.meta)
            where_from = (f"transcripts in {source}, scenario {scenario}" if board.meta.get("source")
                          else f"seeds of {source}")
            title += f"\n{units} {where_from}"
        # Over the whole figure (the key beside the axes takes a third of its width), wrapped to it.
        fig.suptitle(style.wrapped(title, int(style.TITLE_WIDTH * style.WIDE[0] / style.FIGSIZE[0])))
        entries = {p: f"{names[p]}: {_value(px)}, {_value(py)}" for p, (px, py) in points.items()}
        decorate = _key_and_notes(ax, groups, handles, entries, f"(name: {x}, {y})", notes)
        placement.place_with_key(ax, requests + thresholds, decorate)
        fig.set_layout_engine("none")  # the labels were placed in this layout: saving must not move the axes
    return fig


def _key_and_notes(ax, groups: list[list[str]], handles: dict, entries: dict, about: str, notes: list[str]):
    """What ``placement.place_with_key`` redraws for each outcome: the key beside the axes (each group's
    members, each numbered point's name) and the notes under them (with the thresholds left out)."""
    def draw(failed: set[int], numbers: dict[int, int]) -> None:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
        for text in [t for t in ax.texts if t.get_gid() == "notes"]:
            text.remove()
        rows = [(handles[p], entries[p] if gi not in numbers else f"[{numbers[gi]}] {entries[p]}")
                for gi, group in enumerate(groups) if len(group) > 1 or gi in numbers for p in group]
        if rows:
            kinds = ["policies drawn around one place"] if any(len(g) > 1 for g in groups) else []
            kinds += ["numbered for want of room"] if numbers else []
            style.legend_outside(ax, [h for h, _ in rows], [t for _, t in rows],
                                 title=",\n".join(kinds) + f"\n{about}")
            ax.get_legend().set_alignment("left")
            for text in ax.get_legend().get_texts():
                text.set_fontsize(style.SMALL)
        dropped = sum(1 for i in failed if i >= len(groups))  # the thresholds: after the groups' labels
        lines = notes + ([f"{dropped} threshold(s) not written, for want of room"] if dropped else [])
        if lines:
            # Under the x label, in font sizes from the axes (not a share of their height), so they never meet.
            ax.annotate(style.wrapped("; ".join(lines), 75), (0.0, 0.0), xycoords="axes fraction",
                        xytext=(0, -3.4 * style.SMALL * 1.25), textcoords="offset points", fontsize=style.SMALL,
                        va="top", gid="notes", annotation_clip=False)
    return draw


def _range(values: list[tuple[float, float, float]]) -> float:
    centres = [v[0] for v in values]
    return (max(centres) - min(centres)) if len(centres) > 1 and max(centres) > min(centres) else 1.0


def _draw_frontiers(ax, board: Leaderboard, x: str, y: str, xs: str, ys: str, look: dict):
    """A line through each policy's settings, ordered by acting threshold; returns the number of settings left
    out and the labels of their thresholds, to place."""
    left_out, labels = 0, []
    for policy in board.policies():
        settings = board.settings(policy)
        if len(settings) < 2:
            continue
        pts = []
        for setting in settings:
            px, py = board.point(policy, x, xs, setting), board.point(policy, y, ys, setting)
            if px is None or py is None or not (math.isfinite(px[0]) and math.isfinite(py[0])):
                left_out += 1
                continue
            pts.append((board.threshold(policy, setting), setting, px[0], py[0]))
        pts.sort(key=lambda p: (p[0] is None, p[0] if p[0] is not None else 0.0, p[1]))
        c, marker = look[policy]
        ax.plot([p[2] for p in pts], [p[3] for p in pts], color=c, lw=1.1, ls="-", marker=marker, ms=4, mfc="white",
                mec=c, alpha=0.9, zorder=3, gid=f"frontier:{policy}")
        labels += [placement.Request(f"{threshold / 1000:g}k", (px, py), ax.transData, 2.0, numbered=False, rank=1,
                                     props={"fontsize": style.SMALL - 1, "color": style.GREY,
                                            "gid": f"threshold:{policy}"})
                   for threshold, _setting, px, py in pts if threshold is not None]
    return left_out, labels


def _label(figure: str, definitions: dict, stat: str = "median", noun: str = "unit") -> str:
    """``input_ratio, median (ratio)``, ``re_retrievals per transcript, mean``, ``acted, share of seeds``."""
    entry = definitions.get(figure)
    unit = entry.get("unit") if isinstance(entry, dict) else None
    if stat == "share":
        return f"{figure}, share of {noun}s"
    if stat == "mean":
        return f"{figure} per {noun}, mean"
    return f"{figure}, median ({unit})" if unit else f"{figure}, median"


def _value(point: tuple[float, float, float]) -> str:
    v = point[0]
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}"


def _scenario_name(meta: dict) -> str:
    scenario = meta.get("scenario")
    return str(scenario.get("name", "?")) if isinstance(scenario, dict) else "?"
