"""Published figures as targets: the accepted-range rule, target files, and how far a median is from its range.

A *targets file* (TOML) names a scenario, the variants to run it under (a
policy and parameter overrides) and the published figures, each with the
metric that measures it, the value as published and how it is compared. Seed
000's figures ship as ``seed-000`` (``scenarios/targets/seed-000.toml``);
replays, ``prunesim validate`` and ``prunesim calibrate`` all read them from there.

**The rule** (docs/model.md, "Accepted ranges"): every accepted range follows
from the published value and one tolerance, ``TOLERANCE`` = 15%, fixed before
any parameter was fitted; no range is set by hand. A figure is a statistic over
the runs of a block of seeds: the median for numbers, the share of runs where
it holds for yes/no figures.

* ``near`` (a number, "~" or not): value x 0.85 .. value x 1.15; a published 0
  must be 0.
* ``level`` (a utilization level): judged as headroom, ``budget - value``, the
  quantity the failure is about: value -/+ 15% of that headroom.
* ``above`` / ``at_most`` (an inequality: "> 0", "within two turns"): the
  median must satisfy it.
* ``yes`` / ``no`` (the run shows it / does not): at least 85% / at most 15% of
  the runs.
* ``report``: no published number; shown beside the others, never judged.

A judged figure with ``fit = false`` is judged but never fitted by ``prunesim
calibrate``: seed 000's yes/no verdicts are left for the model to reproduce.

**Discrimination.** A figure may name the variant the seed contrasts its own
setting with (``against``): a figure whose statistic also falls in its range
under that setting cannot tell the two apart, and a replay shows it without
counting it as a reproduction (a median of 0 net-negative passes at 20k says
nothing when it is 0 at 22k too).

**Contrasts** (``[[contrasts]]``): where the seed contrasts two settings, the
figure is the difference between them over the same seeds, the share of runs
where the metric holds (is above 0) under ``variant`` minus the share under
``against``, with its paired interval
(:func:`prunesim.observe.metrics.intervals.paired_difference`). Its range is
the difference of the two published ranges: ``drop`` (a published "yes" under
``against``, "no" under ``variant``) accepts ``-1 .. 0.15 - 0.85 = -0.70``;
``fewer`` (only the direction is published) accepts any difference below 0.
Either way the interval must lie below 0 too: the contrast has the seed's sign
with 95% confidence and its size. Contrasts are judged, never fitted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
from prunesim.errors import UserError
from prunesim.io import inputs
from prunesim.io.scenario_files import apply_overrides, from_dict, load, read_toml
from prunesim.model.scenario import Scenario
from prunesim.observe.metrics import METRIC_NAMES, METRICS
from prunesim.policies import REGISTRY
from prunesim.studies.variant import Variant

TOLERANCE = 0.15
COMPARES = ("near", "level", "above", "at_most", "yes", "no", "report")
CONTRASTS = ("drop", "fewer")  # how a contrast between two settings is compared (module docstring)
SHARES = ("yes", "no")  # compared as the share of runs, not the median
YES_NO = frozenset(m.name for m in METRICS if m.unit == "bool")  # reported as a share of runs, never a median


@dataclass(frozen=True)
class Target:
    """A published figure: which variant and metric, the value as published, and the range the rule gives."""

    variant: str
    label: str
    metric: str
    published: str
    value: float
    compare: str
    low: float
    high: float
    fit: bool = True  # whether `prunesim calibrate` fits it (a judged figure may be left to be reproduced)
    against: str = ""  # the variant the seed contrasts this one with ("": none): see "Discrimination"

    @property
    def fitted(self) -> bool:
        return self.judged and self.fit

    @property
    def judged(self) -> bool:
        return self.compare != "report"

    @property
    def reduce(self) -> str:
        return "share" if self.compare in SHARES or self.metric in YES_NO else "median"

    def accepts(self, statistic: float) -> bool:
        if not self.judged:
            return True
        if self.compare == "above":
            return statistic > self.low
        return self.low <= statistic <= self.high

    def accepted_text(self) -> str:
        if not self.judged:
            return "-"
        if self.compare == "above":
            return f"> {_fmt(self.low)}"
        if self.compare == "at_most":
            return f"<= {_fmt(self.high)}"
        return f"{_fmt(self.low)}..{_fmt(self.high)}"

    def excess(self, statistic: float) -> float:
        """How far ``statistic`` lies outside the accepted range, in the units of :meth:`distance`; 0 inside.

        The hinge the calibration's objective is built on: nothing to gain by
        moving a figure that is already in range, and the further out, the worse.
        A one-sided figure, or a published 0, is scaled by its value (at least 1).
        """
        if not self.judged:
            return 0.0
        if math.isnan(statistic) or math.isinf(statistic):
            return math.inf
        v = self.value
        if self.compare in ("near", "level"):
            half = (self.high - self.low) / 2
            if half == 0:
                return abs(statistic - v) / max(abs(v), 1.0)
            return max(0.0, abs(statistic - v) - half) / half
        if self.compare == "above":
            return 0.0 if statistic > v else (v - statistic) / max(abs(v), 1.0)
        if self.compare == "at_most":
            return 0.0 if statistic <= v else (statistic - v) / max(abs(v), 1.0)
        if self.compare == "yes":
            return max(0.0, self.low - statistic) / TOLERANCE
        return max(0.0, statistic - self.high) / TOLERANCE  # "no"

    def distance(self, statistic: float) -> float:
        """How far ``statistic`` lies from the published value, in units of the accepted half-width.

        At most 1 exactly when :meth:`accepts` holds (up to rounding at the edges); the
        calibration uses it only to prefer, among candidates with the same figures in
        range, the one whose figures sit nearer the published values.
        """
        if not self.judged:
            return 0.0
        if math.isnan(statistic) or math.isinf(statistic):
            return math.inf
        v = self.value
        if self.compare in ("near", "level"):
            half = (self.high - self.low) / 2
            if half == 0:
                return 0.0 if statistic == v else 1.0 + abs(statistic - v)
            return abs(statistic - v) / half
        if self.compare == "above":
            return 0.0 if statistic > v else 1.0 + (v - statistic) / max(abs(v), 1.0)
        if self.compare == "at_most":
            return 0.0 if statistic <= v else 1.0 + (statistic - v) / max(abs(v), 1.0)
        if self.compare == "yes":
            return (1.0 - statistic) / TOLERANCE
        return statistic / TOLERANCE  # "no"


def _fmt(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


def accepted_range(compare: str, value: float, budget: int) -> tuple[float, float]:
    """The rule of the module docstring: the range a figure's statistic must fall in."""
    if compare == "near":
        lo, hi = sorted((value * (1 - TOLERANCE), value * (1 + TOLERANCE)))
        return lo, hi
    if compare == "level":
        headroom = budget - value
        return value - TOLERANCE * headroom, value + TOLERANCE * headroom
    if compare == "above":
        return value, math.inf
    if compare == "at_most":
        return -math.inf, value
    if compare == "yes":
        return 1 - TOLERANCE, 1.0
    if compare == "no":
        return 0.0, TOLERANCE
    return -math.inf, math.inf  # report


def statistic(target: Target, values: list) -> float:
    """The median over the runs, or for a yes/no figure the share of runs where the metric holds."""
    arr = np.array([math.inf if v == "inf" else float(v) for v in values], dtype=float)
    if target.reduce == "share":
        return float(np.mean(arr > 0)) if len(arr) else math.nan
    from prunesim.studies.compare import quantile

    return quantile(arr.tolist(), 0.5)


@dataclass(frozen=True)
class Contrast:
    """A contrast between two settings the seed compares: the share of runs where ``metric`` holds under
    ``variant`` minus under ``against``, over the same seeds."""

    variant: str
    against: str
    label: str
    metric: str
    published: str
    compare: str  # one of CONTRASTS
    low: float
    high: float

    judged = True
    reduce = "share"

    def accepts(self, difference: float, interval_high: float) -> bool:
        """In range, and the interval below 0: the seed's sign with 95% confidence, and its size."""
        return self.low <= difference <= self.high and difference < 0 and interval_high < 0

    def accepted_text(self) -> str:
        return f"<= {self.high:.2f}" if self.compare == "drop" else "< 0"


def contrast_range(compare: str) -> tuple[float, float]:
    """The range of a contrast's difference (module docstring): the difference of the published ranges."""
    if compare == "drop":  # "no" here (at most TOLERANCE) against "yes" there (at least 1 - TOLERANCE)
        return -1.0, TOLERANCE - (1 - TOLERANCE)
    return -1.0, 0.0  # "fewer": the sign alone (0 itself excluded by accepts)


@dataclass(frozen=True)
class Targets:
    """A scenario, the variants to run it under, the published figures and the parameters' bounds."""

    path: str
    scenario: str
    variants: tuple[Variant, ...]
    figures: tuple[Target, ...]
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    contrasts: tuple[Contrast, ...] = ()

    def variant(self, label: str) -> Variant:
        return next(v for v in self.variants if v.label == label)


def shipped_targets() -> dict[str, Path]:
    root = resources.files("prunesim.scenarios").joinpath("targets")
    return {Path(e.name).stem: Path(str(e)) for e in root.iterdir() if e.name.endswith(".toml")}


def resolve(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if path.suffix == ".toml" or "/" in name_or_path or path.exists():
        problem = inputs.problem(path, "targets file")
        if problem:
            raise UserError(str(path), None, problem)
        return path
    shipped = shipped_targets()
    if name_or_path not in shipped:
        raise UserError(name_or_path, None, f"unknown targets (shipped: {', '.join(sorted(shipped))}; "
                                            "or give a path to a .toml file)")
    return shipped[name_or_path]


def load_targets(name_or_path: str, scenario: Scenario | None = None) -> Targets:
    """Read and check a targets file; every problem is a :class:`UserError` naming the file and the key.

    ``scenario`` is the scenario the figures are judged on (its budget sets the
    ranges of ``level`` figures); by default the one the file names.
    """
    path = resolve(name_or_path)
    where = str(path)
    data = read_toml(path, "targets file")
    unknown = set(data) - {"scenario", "variants", "figures", "contrasts", "bounds"}
    if unknown:
        raise UserError(where, sorted(unknown)[0], "unknown key (known: scenario, variants, figures, contrasts, "
                        "bounds)")
    name = data.get("scenario")
    if scenario is None:
        if not isinstance(name, str):
            raise UserError(where, "scenario", "missing: the scenario the figures belong to")
        scenario = load(name)
    variants = _variants(data.get("variants"), where, scenario)
    figures = tuple(_figure(i, f, where, variants, scenario) for i, f in enumerate(_list(data, "figures", where)))
    if not figures:
        raise UserError(where, "figures", "no figures")
    bounds = {}
    raw_bounds = data.get("bounds", {})
    if not isinstance(raw_bounds, dict):
        raise UserError(where, "bounds", "must be a table of NAME = [LOW, HIGH]")
    for param, pair in raw_bounds.items():
        bounds[param] = check_bounds(pair, f"bounds.{param}", where)
    contrasts = tuple(_contrast(i, c, where, variants) for i, c in enumerate(_list(data, "contrasts", where)))
    return Targets(where, scenario.name, tuple(variants.values()), figures, bounds, contrasts)


def finite(value) -> bool:
    """A number a float holds and that is finite (not a boolean; not an integer of 400 digits, which no float
    holds and ``math.isfinite`` cannot even be asked about)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _named(value, known) -> bool:
    """Whether ``value`` is one of the names ``known`` (a list or a table where a name is expected is not)."""
    return isinstance(value, str) and value in known


def check_bounds(pair, key: str, where: str) -> tuple[float, float]:
    if (not isinstance(pair, list) or len(pair) != 2
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in pair)):
        raise UserError(where, key, "must be two numbers [LOW, HIGH]")
    if not all(finite(x) for x in pair):
        raise UserError(where, key, "bounds must be finite")
    lo, hi = float(pair[0]), float(pair[1])
    if lo >= hi:
        raise UserError(where, key, f"the bounds cross: low {pair[0]} is not below high {pair[1]}")
    return lo, hi


def _list(data: dict, key: str, where: str) -> list:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise UserError(where, key, "must be an array of tables ([[figures]])")
    return value


def _variants(raw, where: str, scenario: Scenario) -> dict[str, Variant]:
    if not isinstance(raw, dict) or not raw:
        raise UserError(where, "variants", "missing: at least one [variants.\"LABEL\"] table with a policy")
    out = {}
    for label, body in raw.items():
        key = f"variants.{label}"
        if not isinstance(body, dict):
            raise UserError(where, key, "must be a table")
        extra = set(body) - {"policy", "set"}
        if extra:
            raise UserError(where, f"{key}.{sorted(extra)[0]}", "unknown key (known: policy, set)")
        policy = body.get("policy")
        if not _named(policy, REGISTRY):
            raise UserError(where, f"{key}.policy", f"unknown policy {policy!r} (known: {', '.join(sorted(REGISTRY))})")
        overrides = body.get("set", {})
        if not isinstance(overrides, dict):
            raise UserError(where, f"{key}.set", "must be a table of parameter = value")
        overrides = _flatten(overrides)
        from_dict(apply_overrides(scenario.to_dict(), overrides, where=where), f"{where} ({key}.set)", policy)
        out[label] = Variant(label, policy, overrides)
    return out


def _flatten(table: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in table.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, name + "."))
        else:
            out[name] = v
    return out


def variant_scenario(scenario: Scenario, variant: Variant) -> Scenario:
    if not variant.overrides:
        return scenario
    return from_dict(apply_overrides(scenario.to_dict(), variant.overrides), f"{scenario.name} ({variant.label})",
                     variant.policy)


def _figure(i: int, raw: dict, where: str, variants: dict[str, Variant], scenario: Scenario) -> Target:
    key = f"figures[{i}]"
    extra = set(raw) - {"variant", "label", "metric", "published", "value", "compare", "fit", "against"}
    if extra:
        raise UserError(where, f"{key}.{sorted(extra)[0]}", "unknown key")
    variant = raw.get("variant")
    if not _named(variant, variants):
        raise UserError(where, f"{key}.variant", f"unknown variant {variant!r} (known: {', '.join(variants)})")
    metric = _metric(raw, key, where)
    compare = raw.get("compare", "near")
    if not _named(compare, COMPARES):
        raise UserError(where, f"{key}.compare", f"must be one of {', '.join(COMPARES)} (got {compare!r})")
    value = raw.get("value", 0 if compare in ("report", "yes", "no") else None)
    if not finite(value):
        raise UserError(where, f"{key}.value", f"must be a finite number (got {value!r})")
    budget = variant_scenario(scenario, variants[variant]).budget
    if compare == "level" and value >= budget:
        raise UserError(where, f"{key}.value", f"a level must be below the budget {budget} (got {value})")
    label, published = _words(raw, key, where, metric, str(value))
    fit = raw.get("fit", True)
    if not isinstance(fit, bool):
        raise UserError(where, f"{key}.fit", f"must be true or false (got {fit!r})")
    against = raw.get("against", "")
    if against and (not _named(against, variants) or against == variant):
        raise UserError(where, f"{key}.against", f"must name another variant (known: {', '.join(variants)}; "
                        f"got {against!r})")
    low, high = accepted_range(compare, float(value), budget)
    return Target(variant, label, metric, published, float(value), compare, low, high, fit, against)


def _contrast(i: int, raw: dict, where: str, variants: dict[str, Variant]) -> Contrast:
    key = f"contrasts[{i}]"
    extra = set(raw) - {"variant", "against", "label", "metric", "published", "compare"}
    if extra:
        raise UserError(where, f"{key}.{sorted(extra)[0]}", "unknown key")
    variant, against = raw.get("variant"), raw.get("against")
    for name, value in (("variant", variant), ("against", against)):
        if not _named(value, variants):
            raise UserError(where, f"{key}.{name}", f"unknown variant {value!r} (known: {', '.join(variants)})")
    if variant == against:
        raise UserError(where, f"{key}.against", f"contrasts {variant!r} with itself")
    metric = _metric(raw, key, where)
    compare = raw.get("compare")
    if not _named(compare, CONTRASTS):
        raise UserError(where, f"{key}.compare", f"must be one of {', '.join(CONTRASTS)} (got {compare!r})")
    label, published = _words(raw, key, where, metric, compare)
    low, high = contrast_range(compare)
    return Contrast(variant, against, label, metric, published, compare, low, high)


def _metric(raw: dict, key: str, where: str) -> str:
    metric = raw.get("metric")
    if not _named(metric, METRIC_NAMES):
        raise UserError(where, f"{key}.metric", f"unknown figure {metric!r} (see `prunesim metrics`)")
    return metric


def _words(raw: dict, key: str, where: str, metric: str, published: str) -> tuple[str, str]:
    """A figure's label (its metric by default) and its published text (``published`` by default)."""
    label, published = raw.get("label", metric), raw.get("published", published)
    if not isinstance(label, str) or not isinstance(published, str):
        raise UserError(where, key, "label and published must be strings")
    return label, published
