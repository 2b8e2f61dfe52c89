"""Calibration: fit scenario parameters to published figures, with a real optimizer.

The *objective* of a candidate (a value for each fitted parameter) rewards
figures in range, which is what validation judges (docs/model.md, "Calibration").
For each fitted figure of a targets file, with ``s`` its statistic over the seeds:

* ``miss``: 0 when ``s`` is in the figure's accepted range, else
  ``1 + excess``, where ``excess`` (:meth:`Target.excess`) is how far ``s``
  lies outside the range in units of the range's half-width (a hinge);
* ``centre``: ``min(distance, 1)^2 / (2 n)``, with ``distance``
  (:meth:`Target.distance`) the distance from the published value in
  half-widths and ``n`` the number of fitted figures. Summed over the figures it stays below 1/2, so it never
  outweighs a single figure in range: it only prefers, among candidates with the
  same figures in range, the one whose figures sit away from the edges, where
  unseen seeds are less likely to push them out.

The objective is the sum of both over the fitted figures: the number of figures
out of range, plus how far out they are, plus less than 1/2. Every candidate
runs on the same seeds, hence the same workloads (common random numbers): two
candidates differ only by their parameters, never by their luck.

The optimizer works on the parameters scaled to [0, 1] within their bounds,
with a fixed protocol from :mod:`scipy.optimize` and a budget of ``max_evals``
distinct candidates: ``STARTS`` runs of :func:`differential_evolution`, each
with its own seed (``OPTIMIZER_SEED``, ``OPTIMIZER_SEED + 1``, ...) and
``DE_SHARE / STARTS`` of the budget (a population spread over the whole box,
robust to the plateaus that medians of whole counts and the hinge make), then a
Nelder-Mead polish (:func:`minimize`) from the best candidate seen, with the
rest. None starts at the scenario's current values, so the fitted values depend
only on the targets, the bounds, the seeds and the parameters left alone:
running the command again on its own output gives the same file, byte for byte.
Integer parameters are rounded before each run. Figures marked ``fit = false``
are judged, reported, and left out of the objective.

:func:`calibrated_text` makes the scenario file: the base's data with the
fitted values placed as ``--set`` places them, written with the fitted values
edited in place (comments kept) when that gives exactly this data, else by the
one scenario writer (:func:`prunesim.io.scenario_files.dumps`: a base that writes a
parameter as a dotted key or an inline table), under a header recording the
targets, seeds, parameters, objective and the exact command. A relative
``extends`` is rewritten to name the same base from where the file is written.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from prunesim import __version__
from prunesim.errors import UserError, visible
from prunesim.io.scenario_files import apply_overrides, dumps, from_dict
from prunesim.kernel.choice import EngineChoice, KernelRefused
from prunesim.model.scenario import Scenario
from prunesim.policies import REGISTRY
from prunesim.studies.targets import Target, Targets, check_bounds, statistic

EXCESS_CAP = 100.0  # one figure at infinity (a ratio with no net) must not hide all the others
INFEASIBLE = 1e12  # a candidate the scenario rejects
STARTS = 2  # seeded differential-evolution runs: one unlucky population does not decide the fit
DE_SHARE = 0.7  # of the budget, split between the starts; the rest polishes the best candidate
OPTIMIZER_SEED = 0  # the first population's seed: part of the method, so the same command gives the same fit
METHOD = f"{STARTS} seeded differential_evolution starts, then a Nelder-Mead polish"
OBJECTIVE_TEXT = ("figures out of range + their distance outside it in half-widths "
                  "+ < 1/2 for closeness to the published values")
HEADER_BEGIN = "# -- calibration: written by `prunesim calibrate`; regenerate with the command below --"
HEADER_END = "# -- end of calibration --"


@dataclass(frozen=True)
class Param:
    """A fitted parameter: its dotted name, bounds and whether the scenario wants an integer."""

    name: str
    low: float
    high: float
    integer: bool

    def value(self, unit: float) -> float | int:
        """The parameter's value at ``unit`` in [0, 1] of its bounds."""
        x = self.low + min(max(unit, 0.0), 1.0) * (self.high - self.low)
        return int(round(x)) if self.integer else float(np.round(x, 6))


def parse_params(text: str, scenario: Scenario, targets: Targets, flag: str = "--params") -> list[Param]:
    """``NAME[=LOW:HIGH],...``: numeric scenario parameters with bounds (from the flag or the targets' [bounds])."""
    items = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in items):
        raise UserError(flag, text, "expected NAME[=LOW:HIGH],... (dotted scenario parameters)")
    data = scenario.to_dict()
    for name in targets.bounds:  # a misspelt entry would otherwise lie unused, its parameter left without bounds
        try:
            _lookup(data, name, flag)
        except UserError as err:
            raise UserError(str(targets.path), f"bounds.{name}", err.problem) from None
    out: list[Param] = []
    for item in items:
        name, _, raw = item.partition("=")
        name = name.strip()
        if any(p.name == name for p in out):
            raise UserError(flag, name, "is named twice")
        value = _lookup(data, name, flag)
        if raw:
            lo_hi = raw.split(":")
            try:
                pair = [float(x) for x in lo_hi]
            except ValueError:
                raise UserError(flag, name, f"bounds {raw!r} must be LOW:HIGH, two numbers") from None
            if len(pair) != 2:
                raise UserError(flag, name, f"bounds {raw!r} must be LOW:HIGH, two numbers")
            lo, hi = check_bounds(pair, name, flag)
        elif name in targets.bounds:
            lo, hi = targets.bounds[name]
        else:
            raise UserError(flag, name, f"no bounds: give {name}=LOW:HIGH or a [bounds] entry in {targets.path}")
        out.append(Param(name, lo, hi, isinstance(value, int)))
    try:  # the optimizer starts at the centre of the bounds: it must be a valid scenario for every variant
        centre = apply_overrides(data, {p.name: p.value(0.5) for p in out})
        for v in targets.variants:
            from_dict(apply_overrides(centre, v.overrides), flag, v.policy)
    except UserError as err:
        raise UserError(flag, text, f"the centre of the bounds is not a valid scenario: {err.key}: {err.problem}") \
            from None
    return out


def _lookup(data: dict, name: str, flag: str):
    node = data
    for part in name.split("."):
        if not isinstance(node, dict) or part not in node:
            raise UserError(flag, name, "no such scenario parameter")
        node = node[part]
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        kind = "a table" if isinstance(node, dict) else "a list" if isinstance(node, list) else \
            "true/false" if isinstance(node, bool) else f"the string {node!r}"
        raise UserError(flag, name, f"is not numeric (it is {kind})")
    return node


@dataclass
class FigureFit:
    target: Target
    start: float
    fitted: float

    @property
    def ok(self) -> bool:
        return self.target.accepts(self.fitted)


@dataclass
class Calibration:
    targets: Targets
    params: list[Param]
    seeds: list[int]
    start: dict[str, float]
    fitted: dict[str, float]
    start_objective: float
    objective: float
    evaluations: int
    figures: list[FigureFit] = field(default_factory=list)
    optimizer_message: str = ""


class Objective:
    """The objective of the module docstring, with every candidate's figures remembered."""

    def __init__(self, base: Scenario, targets: Targets, params: list[Param], seeds: Sequence[int],
                 progress: Callable[[int, float, float], None] | None = None, engine: EngineChoice | None = None):
        self.base = base.to_dict()
        self.engine = engine or EngineChoice()
        self.targets = targets
        self.params = params
        self.seeds = list(seeds)
        self.judged = [f for f in targets.figures if f.judged]
        self.fitted = [f for f in self.judged if f.fit]
        self.variants = [v for v in targets.variants if any(f.variant == v.label for f in self.judged)]
        missing = [v.policy for v in self.variants if v.policy not in REGISTRY]
        if missing:
            raise UserError(targets.path, "variants", f"policy {missing[0]!r} is not registered")
        self.memo: dict[tuple, tuple[float, dict[Target, float]]] = {}
        self.progress = progress
        self.best = math.inf

    def values(self, unit: Sequence[float]) -> dict[str, float | int]:
        return {p.name: p.value(u) for p, u in zip(self.params, unit, strict=True)}

    def figures(self, values: dict) -> tuple[float, dict[Target, float]]:
        key = tuple(values[p.name] for p in self.params)
        if key in self.memo:
            return self.memo[key]
        try:
            runs = {}
            for v in self.variants:
                data = apply_overrides(apply_overrides(self.base, values), v.overrides)
                sc = from_dict(data, f"candidate {values}", v.policy)  # infeasible for what its policy reads
                runs[v.label] = self.engine.summaries(v.label, sc, v.policy, self.seeds)
        except KernelRefused:
            raise
        except UserError:
            self.memo[key] = (INFEASIBLE, {})
            return self.memo[key]
        stats = {f: statistic(f, [r[f.metric] for r in runs[f.variant]]) for f in self.judged}
        total = float(sum(self.loss(f, stats[f]) for f in self.fitted))
        self.memo[key] = (total, stats)
        if self.progress is not None:
            self.best = min(self.best, total)
            self.progress(len(self.memo), total, self.best)
        return self.memo[key]

    def loss(self, target: Target, value: float) -> float:
        """One figure's share of the objective (module docstring): its miss, then its centring."""
        miss = 0.0 if target.accepts(value) else 1.0 + min(target.excess(value), EXCESS_CAP)
        centre = min(target.distance(value), 1.0) ** 2 / len(self.fitted) / 2
        return miss + centre

    def __call__(self, unit: np.ndarray) -> float:
        return self.figures(self.values(unit))[0]


def calibrate(base: Scenario, targets: Targets, params: list[Param], seeds: Sequence[int], max_evals: int = 400,
              progress: Callable[[int, float, float], None] | None = None,
              engine: EngineChoice | None = None) -> Calibration:
    """Fit ``params`` to the judged figures of ``targets``; see the module docstring. ``engine``: which engine
    runs each variant (default: SimPy)."""
    from scipy.optimize import differential_evolution, minimize

    objective = Objective(base, targets, params, seeds, progress, engine)
    if not objective.fitted:
        raise UserError(targets.path, "figures", "no figure to fit (every figure is compare = \"report\" "
                        "or fit = false)")
    n = len(params)
    x0 = np.full(n, 0.5)
    start_values = objective.values(x0)
    start_objective, start_stats = objective.figures(start_values)
    box = [(0.0, 1.0)] * n
    # Stage 1: STARTS seeded populations of 4 x n candidates per generation, as many generations as their
    # share of the budget allows. The first includes the centre of the bounds; every candidate is remembered,
    # so a point two starts share is run once.
    popsize = 4
    generations = max(1, int(max_evals * DE_SHARE / STARTS) // (popsize * n) - 1)
    for start in range(STARTS):
        differential_evolution(objective, box, popsize=popsize, maxiter=generations, polish=False, tol=0,
                               init="latinhypercube", rng=np.random.default_rng(OPTIMIZER_SEED + start),
                               x0=x0 if start == 0 else None, updating="immediate")
    # Stage 2: Nelder-Mead from the best candidate seen, with a simplex a twentieth of each range wide.
    best = np.clip(np.array(_best_unit(objective)), 0.0, 1.0)
    simplex = np.vstack([best] + [np.clip(best + 0.05 * np.eye(n)[i], 0, 1) if best[i] <= 0.95
                                  else best - 0.05 * np.eye(n)[i] for i in range(n)])
    left = max(max_evals - len(objective.memo), n + 1)
    result = minimize(objective, best, method="Nelder-Mead", bounds=box,
                      options={"initial_simplex": simplex, "maxfev": left, "xatol": 1e-3, "fatol": 1e-3,
                               "adaptive": n > 3})
    # The best candidate seen, which is the optimizer's answer unless it ended on a tie elsewhere.
    best_key = min(objective.memo, key=lambda k: (objective.memo[k][0], k))
    fitted = dict(zip((p.name for p in params), best_key, strict=True))
    total, stats = objective.memo[best_key]
    fits = [FigureFit(f, start_stats.get(f, math.nan), stats.get(f, math.nan)) for f in objective.judged]
    return Calibration(targets, params, list(seeds), start_values, fitted, start_objective, total,
                       len(objective.memo), fits, str(result.message))


def _best_unit(objective: Objective) -> list[float]:
    """The best candidate remembered so far, back on the unit box (ties: the smallest values)."""
    key = min(objective.memo, key=lambda k: (objective.memo[k][0], k))
    return [(v - p.low) / (p.high - p.low) for p, v in zip(objective.params, key, strict=True)]


# -- the calibrated scenario file -------------------------------------------------------------
def _fmt_value(v) -> str:
    if isinstance(v, str):  # a TOML basic string: JSON's escapes are TOML's, and DEL must be escaped too
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")
    return str(v) if isinstance(v, int) else repr(float(v))


def set_values(text: str, values: dict[str, float | int]) -> str:
    """``text`` (a scenario file) with each dotted parameter set to its value; comments and layout kept.

    A parameter the file does not write is added under its table (the table is
    created at the end when the file has none).
    """
    lines = text.splitlines()
    for name, value in values.items():
        *table_parts, key = name.split(".")
        table = ".".join(table_parts)
        current, header_at, done = "", None, False
        for i, line in enumerate(lines):
            stripped = line.lstrip()
            if stripped.startswith("[["):
                current = None  # keys in arrays of tables are never fitted
                continue
            head = re.match(r"\[\s*([^\[\]]+?)\s*\]", stripped)
            if head:
                current = ".".join(part.strip().strip('"') for part in head.group(1).split("."))  # [ a . b ]
                if current == table:
                    header_at = i
                continue
            m = re.match(rf"(\s*){re.escape(key)}(\s*=\s*)([^#]*?)(\s*)(#.*)?$", line)
            if m and current == table:
                new = _fmt_value(value)
                # The comment stays in its column where the new value leaves room.
                gap = " " * max(len(m.group(3)) + len(m.group(4)) - len(new), 1) if m.group(5) else ""
                lines[i] = f"{m.group(1)}{key}{m.group(2)}{new}{gap}{m.group(5) or ''}"
                done = True
                break
        if done:
            continue
        entry = f"{key} = {_fmt_value(value)}"
        if not table:
            first_table = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("[")), len(lines))
            lines.insert(first_table, entry)
        elif header_at is None:
            lines += ["", f"[{table}]", entry]
        else:
            lines.insert(header_at + 1, entry)
    return "\n".join(lines) + "\n"


def strip_header(text: str) -> str:
    if HEADER_BEGIN in text and HEADER_END in text:
        before, rest = text.split(HEADER_BEGIN, 1)
        after = rest.split(HEADER_END, 1)[1]
        return before + after.lstrip("\n")
    return text


def header(cal: Calibration, command: str, targets_label: str) -> str:
    seeds = cal.seeds
    span = f"{seeds[0]}..{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) else ",".join(map(str, seeds))
    out = [
        HEADER_BEGIN,
        f"#   {command}",
        f"# targets: {targets_label} ({len(cal.figures)} judged figures)",
        f"# seeds: {span} ({len(seeds)} seeds, the same for every candidate: common random numbers)",
        f"# optimizer: scipy.optimize {METHOD} (seed {OPTIMIZER_SEED}); {cal.evaluations} distinct candidates; "
        f"prunesim {__version__}",
        f"# objective: {OBJECTIVE_TEXT}",
        f"#   at the centre of the bounds {_num(cal.start_objective)}, fitted {_num(cal.objective)}",
        "# parameters (bounds):",
    ]
    for p in cal.params:
        out.append(f"#   {p.name} = {_fmt_value(cal.fitted[p.name])}   ({_num(p.low)}..{_num(p.high)})")
    out.append("# fit on these seeds (statistic: median, or share of runs for yes/no):")
    for f in cal.figures:
        t = f.target
        out.append(f"#   {t.variant}: {t.label}: published {t.published}, fitted {_num(f.fitted)}, "
                   f"accepted {t.accepted_text()}, {'in range' if f.ok else 'OUT OF RANGE'}"
                   + ("" if t.fit else " (not fitted: judged only)"))
    out.append(HEADER_END)
    # A comment ends at a newline: a control character from a path or a targets label would
    # start a line of TOML of its own (a parse error, or a key written into the scenario).
    return "\n".join(visible(line) for line in out) + "\n"


def _num(x: float) -> str:
    if isinstance(x, float) and (math.isinf(x) or math.isnan(x)):
        return str(x)
    return f"{x:,.4g}" if abs(x) < 1000 else f"{x:,.0f}"


def calibrated_text(base_text: str, cal: Calibration, command: str, targets_label: str,
                    base_path: Path | None = None, out: Path | None = None) -> str:
    """The scenario file's text with the fitted values and the header (module docstring); checked by loading it
    back. ``base_path`` and ``out``: where the base was read and the file goes, for a relative ``extends``."""
    source = strip_header(base_text)
    try:
        wanted = apply_overrides(tomllib.loads(source), cal.fitted)
    except tomllib.TOMLDecodeError as err:
        raise UserError(str(base_path or "the scenario"), None, f"malformed TOML: {err}") from None
    edits: dict = dict(cal.fitted)
    extends = wanted.get("extends")
    if isinstance(extends, str) and base_path is not None and out is not None and (
            extends.endswith(".toml") or "/" in extends) and not os.path.isabs(extends):
        moved = os.path.relpath(Path(base_path).parent / extends, Path(out).parent)
        if moved != extends:
            wanted["extends"] = edits["extends"] = moved
    body = set_values(source, edits)
    try:
        kept = tomllib.loads(body) == wanted
    except tomllib.TOMLDecodeError:
        kept = False
    if not kept:  # the base writes a parameter in a form the in-place edit does not follow
        body = dumps(wanted)
    text = header(cal, command, targets_label) + body
    data = tomllib.loads(text)
    for name, value in cal.fitted.items():
        node = data
        for part in name.split("."):
            node = node[part]
        if node != value:
            raise RuntimeError(f"writing {name} = {value} into the scenario file failed (read back {node!r})")
    return text
