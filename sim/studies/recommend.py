"""prunesim recommend: which policy to run on these units, paired, and how sure that answer is.

Every policy runs on the same *units* (each transcript of a folder, replayed as
it ran, or each seed of a synthetic scenario), noop among them. Two questions
are answered, each on its own footing:

**What each policy did, paired** (the assumptions at their values). For every
policy against noop and against every other policy, on the same units: the
total dollars, the difference of the totals with the percentile-bootstrap 95%
interval of that difference (units resampled with replacement, each unit's two
runs drawn together: :func:`~prunesim.studies.aggregate.paired_total_interval`),
the median and mean per-unit difference, and wins, losses and ties on the units
where the policy *acted* (its run changed the window: a prune pass, an eviction,
a clearing, a compaction or a warning, as the leaderboard's ``acted``). A tie
is a difference of at most 0.1% of noop's bill on that unit (:data:`TIE_SHARE`).
``break_even``: the shortest session length (turns) from which, over every unit
at least that long, the policy's summed difference stays below zero; none when
it never does. ``oracle_gap``: the share of the clairvoyant optimum's saving over
noop (:mod:`prunesim.studies.optimum`) that the policy achieves, in totals; its
``oracle_gap_interval`` is recomputed in each draw of the ranking below (the
units resampled, the optimum's run re-priced at the draw's assumptions as every
policy's is), widened as the totals are.

**The ranking under uncertainty.** Each of ``draws`` draws resamples the units
(with replacement, every policy on the same resample) and draws every uncertain
assumption together (:mod:`prunesim.studies.assumptions`): re-priced ones from
each run's per-call stream (:mod:`prunesim.studies.reprice`), re-simulated ones
by picking one of the levels each run was replayed at. Per policy: ``p_best``,
the share of draws in which its objective is the lowest (a tie shares the draw
equally), and ``rank_interval``, the 2.5th and 97.5th percentiles of its rank (1
is the cheapest; tied policies share the better rank). The recommendation names a
policy only when its ``p_best`` is at least 0.9 (:data:`CLEAR`); otherwise it is
``no clear winner`` and names the policies that tie: those whose rank interval
reaches 1. ``sensitivity`` says, for each drawn assumption set to either end of
its range (the others at their values, every unit once), which policy is then
the cheapest, and whether that changes the top.

The objective is ``dollars`` (the sum of the units' bills) or
``dollars-per-solved`` (that sum over the sum of the runs' predicted solved
share, ``task_success``); the latter is refused while no run reports one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from prunesim import __version__
from prunesim.errors import UserError
from prunesim.io import atomic
from prunesim.studies import aggregate, reprice
from prunesim.studies.assumptions import CENTRE, REACTION, REPRICED, RESIMULATED, STRATA, SUMMARY, Assumption
from prunesim.studies.leaderboard import REFERENCE
from prunesim.studies.recommend_units import UnitRuns

OBJECTIVES = ("dollars", "dollars-per-solved")
DRAWS = 1000
MAX_DRAWS = 100_000
TIE_SHARE = aggregate.TIE_SHARE  # a difference of at most this share of noop's bill on the unit is a tie
CLEAR = 0.9  # a policy is named when it is the cheapest in at least this share of draws
FEW_UNITS = 10  # below this many units, the recommendation says how little its resampling can tell
BLOCK = 256  # draws priced at a time
NO_CLEAR_WINNER = "no clear winner"
JSON_FILE = "recommend.json"
CSV_FILE = "recommend.csv"
PAIR_COLUMNS = ("policy", "against", "units", "total_usd", "against_usd", "diff_usd", "ci_low", "ci_high",
                "median_diff", "mean_diff", "acted", "wins", "losses", "ties")


# -- the statistics ------------------------------------------------------------------------------------------
@dataclass
class Recommendation:
    """What :func:`recommend` found (module docstring); :meth:`to_json` is ``recommend.json``."""

    objective: str
    recommendation: str
    winner: str | None
    tied: list[str]
    draws: int
    units: list[str]
    assumptions: list[Assumption]
    policies: list[dict]
    pairs: list[dict]
    sensitivity: list[dict]
    clairvoyant: dict | None
    unobservable: dict[str, str] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"experimental": True, **self.meta, "objective": self.objective, "recommendation": self.recommendation,
                "winner": self.winner, "tied": self.tied, "clear_at": CLEAR, "draws": self.draws,
                "units": len(self.units), "assumptions": [a.to_json() for a in self.assumptions],
                "sensitivity": self.sensitivity, "policies": self.policies, "clairvoyant": self.clairvoyant,
                "unobservable": self.unobservable, "notes": self.notes, "tie_share": TIE_SHARE,
                "prunesim_version": __version__}


def _centre(units: list[UnitRuns], policies: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per unit and policy at the assumptions' values: dollars as the engine bills them, solved, acted."""
    cost = np.zeros((len(units), len(policies)))
    solved = np.full((len(units), len(policies)), np.nan)
    acted = np.zeros((len(units), len(policies)), dtype=bool)
    for i, u in enumerate(units):
        p = u.billing.pricing
        for j, name in enumerate(policies):
            m = u.runs[name][(CENTRE, CENTRE)]
            cost[i, j] = round(float(reprice.dollars(m.stream, p, [p.reuse], [True])[0]), 9)
            solved[i, j] = np.nan if m.solved is None else m.solved
            acted[i, j] = m.acted
    return cost, solved, acted


def without_success(profiles: list[str]) -> str:
    """Why ``--objective dollars-per-solved`` is refused when runs under ``profiles`` ('' for none) report no
    predicted solved share (docs/agent.md: only profiles fitted on outcome data have a success model)."""
    named = [p for p in profiles if p]
    why = []
    if named:
        why.append(f"the agent profile {', '.join(named)} has no success model (no outcome data of that scaffold "
                   "to fit one on: docs/agent.md)")
    if "" in profiles or not profiles:
        why.append("some runs have no agent model (--agent none, or a synthetic run under auto)")
    return (f"needs each run's predicted solved share (task_success), and {'; '.join(why)}; --agent swe-agent or "
            "--agent openhands predicts one, or use --objective dollars")


def refuse_without_success(scenario, transcripts: bool) -> None:
    """Refuse ``--objective dollars-per-solved`` before any run where the profile is known to have no success
    model: one the user named (a transcript's ``auto`` profile is its format's, known only once it is read: the
    runs' own refusal, :func:`without_success`, names those), or a synthetic run's."""
    from prunesim.model.agent_profiles import AUTO, resolve

    if transcripts and scenario.agent.profile == AUTO:
        return
    profile = resolve(scenario.agent)
    if profile is None or not profile.success_on:
        raise UserError("--objective", "dollars-per-solved", without_success([profile.name if profile else ""]))


def _objective(cost: np.ndarray, solved: np.ndarray, objective: str, axis: int) -> np.ndarray:
    total = cost.sum(axis=axis)
    if objective == "dollars":
        return total
    return total / solved.sum(axis=axis)


def break_even(diff: np.ndarray, turns: np.ndarray, acted: np.ndarray) -> dict | None:
    """The shortest session length from which the summed difference over every unit at least that long stays below
    zero, where the policy acted on such a unit (None: no such length)."""
    lengths = sorted(set(turns[acted].tolist()))
    found = None
    for length in reversed(lengths):
        longer = turns >= length
        if diff[longer].sum() < 0:
            found = length
        else:
            break
    if found is None:
        return None
    longer = turns >= found
    return {"turns": int(found), "units": int(longer.sum()), "diff_usd": _usd(diff[longer].sum())}


def _usd(x: float) -> float:
    return round(float(x), 9)


def _ranks(totals: np.ndarray) -> np.ndarray:
    """Competition ranks per draw (1 = the lowest; tied values share the better rank)."""
    return 1 + (totals[:, None, :] < totals[:, :, None]).sum(axis=2)


def p_best(totals: np.ndarray) -> np.ndarray:
    """The share of draws in which each policy's objective is the lowest, a tie shared equally."""
    best = totals == totals.min(axis=1, keepdims=True)
    return (best / best.sum(axis=1, keepdims=True)).mean(axis=0)


def decide(names: list[str], chance: np.ndarray, rank_low: np.ndarray) -> tuple[str, str | None, list[str]]:
    """(recommendation, winner, tied): a policy only when its chance of being the cheapest reaches :data:`CLEAR`."""
    k = int(np.argmax(chance))
    if chance[k] >= CLEAR:
        return names[k], names[k], []
    tied = [n for n, low in zip(names, rank_low, strict=True) if low <= 1]
    return NO_CLEAR_WINNER, None, tied


class Draws:
    """The draws of the ranking: resampled units and every drawn assumption, from one seeded generator."""

    def __init__(self, units: list[UnitRuns], assumptions: list[Assumption], count: int, seed: int):
        rng = aggregate._group_rng(seed, ("recommend", "draws"))
        n = len(units)
        self.count = count
        self.units = aggregate.resample_units(rng, n, count)
        self.reuse: dict[str, np.ndarray] = {}
        self.cached: dict[str, np.ndarray] = {}
        self.levels = {SUMMARY: np.full(count, CENTRE, dtype=object), REACTION: np.full(count, CENTRE, dtype=object)}
        for a in assumptions:
            if a.how == REPRICED and a.name.startswith("pricing.reuse"):
                self.reuse[a.model] = rng.uniform(a.levels["lo"], a.levels["hi"], count)
            elif a.how == REPRICED and a.name.startswith("pricing.cache"):
                self.cached[a.model] = rng.random(count) < 0.5
            elif a.how == RESIMULATED:
                self.levels[a.name] = np.array(STRATA, dtype=object)[rng.integers(0, len(STRATA), count)]

    def costs(self, units: list[UnitRuns], policies: list[str], draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Dollars and solved share per draw of ``draws``, unit and policy (each run priced for its draws)."""
        d = len(draws)
        cost = np.zeros((d, len(units), len(policies)))
        solved = np.full((d, len(units), len(policies)), np.nan)
        pairs = list(zip(self.levels[SUMMARY][draws], self.levels[REACTION][draws], strict=True))
        for i, u in enumerate(units):
            p, model = u.billing.pricing, u.billing.model
            reuse = self.reuse[model][draws] if model in self.reuse else np.full(d, p.reuse)
            cached = self.cached[model][draws] if model in self.cached else np.ones(d, dtype=bool)
            for j, name in enumerate(policies):
                by_run: dict[int, list[int]] = {}
                runs = u.runs[name]
                for k, pair in enumerate(pairs):
                    by_run.setdefault(id(runs[pair]), []).append(k)
                lookup = {id(m): m for m in runs.values()}
                for run_id, ks in by_run.items():
                    m = lookup[run_id]
                    cost[ks, i, j] = reprice.dollars(m.stream, p, reuse[ks], cached[ks])
                    solved[ks, i, j] = np.nan if m.solved is None else m.solved
        return cost, solved

    def optimum_costs(self, units: list[UnitRuns], draws: np.ndarray) -> np.ndarray:
        """The clairvoyant optimum's dollars per draw of ``draws`` and unit, its run re-priced at each draw's
        ``reuse`` and cache as the policies' are (planned once, at the assumptions' values)."""
        cost = np.zeros((len(draws), len(units)))
        for i, u in enumerate(units):
            p, model = u.billing.pricing, u.billing.model
            reuse = self.reuse[model][draws] if model in self.reuse else np.full(len(draws), p.reuse)
            cached = self.cached[model][draws] if model in self.cached else np.ones(len(draws), dtype=bool)
            cost[:, i] = reprice.dollars(u.clairvoyant.stream, p, reuse, cached)
        return cost

    def totals(self, units: list[UnitRuns], policies: list[str], objective: str,
               ref: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """The objective per draw and policy over the draw's resample of the units, its spread about the value
        over every unit once (at the draw's assumptions) widened as the paired intervals are
        (:func:`prunesim.studies.aggregate.expansion`): over a few units a plain resample is too sure. Priced
        :data:`BLOCK` draws at a time, so that memory does not grow with the number of draws.

        With ``ref`` (noop's column) and an optimum on every unit, also each policy's ``oracle_gap`` per draw, in
        dollars whatever the objective, widened the same way (NaN where the draw's optimum saves nothing)."""
        out = np.empty((self.count, len(policies)))
        gaps = None
        if ref is not None and units and all(u.clairvoyant is not None for u in units):
            gaps = np.empty((self.count, len(policies)))
        widen = aggregate.expansion(len(units))
        for start in range(0, self.count, BLOCK):
            draws = np.arange(start, min(self.count, start + BLOCK))
            cost, solved = self.costs(units, policies, draws)
            rows = np.arange(len(draws))[:, None]
            picked = self.units[draws]
            resampled = _objective(cost[rows, picked], solved[rows, picked], objective, axis=1)
            whole = _objective(cost, solved, objective, axis=1)
            out[draws] = whole + widen * (resampled - whole)
            if gaps is not None:
                best = self.optimum_costs(units, draws)
                gap_whole = oracle_gaps(cost.sum(axis=1), best.sum(axis=1), ref)
                gap_drawn = oracle_gaps(cost[rows, picked].sum(axis=1), best[rows, picked].sum(axis=1), ref)
                gaps[draws] = gap_whole + widen * (gap_drawn - gap_whole)
        return out, gaps


def oracle_gaps(totals: np.ndarray, optimum: np.ndarray, ref: int) -> np.ndarray:
    """Each policy's share of the optimum's saving over noop (``totals``: draws x policies; ``optimum``: per draw);
    NaN where the optimum saves nothing."""
    saving = totals[:, ref] - optimum
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = (totals[:, ref][:, None] - totals) / saving[:, None]
    return np.where(saving[:, None] > 0, gap, np.nan)


def gap_interval(gaps: np.ndarray) -> list[float] | None:
    """The 95% percentile interval of a policy's drawn gaps, over the draws where the optimum saved something."""
    finite = gaps[np.isfinite(gaps)]
    if not len(finite):
        return None
    low, high = aggregate.percentile_interval(finite)
    return [round(low, 6), round(high, 6)]


def sensitivity(units: list[UnitRuns], policies: list[str], assumptions: list[Assumption], objective: str,
                top: list[str]) -> list[dict]:
    """For each drawn assumption at each end of its range (the others at their values): the cheapest policies."""
    out = []
    for a in assumptions:
        if a.how not in (REPRICED, RESIMULATED):
            continue
        row = {"name": a.name, "top": top}
        for end in ("lo", "hi"):
            cost = np.zeros((len(units), len(policies)))
            solved = np.full((len(units), len(policies)), np.nan)
            for i, u in enumerate(units):
                p = u.billing.pricing
                reuse, cached, pair = p.reuse, True, (CENTRE, CENTRE)
                if a.name.startswith("pricing.reuse") and a.model == u.billing.model:
                    reuse = a.levels[end]
                elif a.name.startswith("pricing.cache") and a.model == u.billing.model:
                    cached = a.levels[end] != "none"
                elif a.name == SUMMARY:
                    pair = (end, CENTRE)
                elif a.name == REACTION:
                    pair = (CENTRE, end)
                for j, name in enumerate(policies):
                    m = u.runs[name][pair]
                    cost[i, j] = reprice.dollars(m.stream, p, [reuse], [cached])[0]
                    solved[i, j] = np.nan if m.solved is None else m.solved
            value = _objective(cost, solved, objective, axis=0)
            best = [n for n, v in zip(policies, value, strict=True) if v == value.min()]
            row[f"at_{end}"] = {"value": a.levels[end] if isinstance(a.levels[end], str) else _num(a.levels[end]),
                                "top": best}
        row["changes_top"] = row["at_lo"]["top"] != top or row["at_hi"]["top"] != top
        out.append(row)
    return out


def _num(x: float) -> float:
    return round(float(x), 6)


def recommend(units: list[UnitRuns], policies: list[str], assumptions: list[Assumption], *,
              objective: str = "dollars", draws: int = DRAWS, seed: int = 0, meta: dict | None = None
              ) -> Recommendation:
    """The paired table, the ranking under uncertainty and the recommendation (module docstring)."""
    if objective not in OBJECTIVES:
        raise UserError("--objective", objective, f"unknown objective (known: {', '.join(OBJECTIVES)})")
    if not 1 <= draws <= MAX_DRAWS:
        raise UserError("--draws", str(draws), f"must be from 1 to {MAX_DRAWS:,}")
    if not units:
        raise UserError("recommend", None, "no unit to recommend from")
    cost, solved, acted = _centre(units, policies)
    if objective == "dollars-per-solved" and np.isnan(solved).any():
        silent = sorted({m.profile for u in units for runs in u.runs.values() for m in runs.values()
                         if m.solved is None})
        raise UserError("--objective", objective, without_success(silent))
    turns = np.array([u.runs[REFERENCE][(CENTRE, CENTRE)].turns for u in units])
    ref = policies.index(REFERENCE)
    d = Draws(units, assumptions, draws, seed)
    totals, gaps = d.totals(units, policies, objective, ref)
    chance = p_best(totals)
    ranks = _ranks(totals)
    bounds = np.array([aggregate.percentile_interval(ranks[:, j]) for j in range(len(policies))])
    recommendation, winner, tied = decide(policies, chance, bounds[:, 0])
    centre_value = _objective(cost, solved, objective, axis=0)
    top = [n for n, v in zip(policies, centre_value, strict=True) if v == centre_value.min()]
    clair = _clairvoyant(units)
    rows, unobservable = [], {}
    for j, name in enumerate(policies):
        vs = aggregate.paired_comparison(cost[:, j], cost[:, ref], acted[:, j], cost[:, ref],
                                         (name, "", "against", REFERENCE))
        row = {"policy": name, "total_usd": vs["total_usd"], "objective_value": _num(centre_value[j]),
               "diff_vs_noop": {k: vs[k] for k in ("diff_usd", "interval", "median_diff", "mean_diff")},
               "acted_share": round(float(acted[:, j].mean()), 6), "p_best": round(float(chance[j]), 6),
               "solved_share": None if np.isnan(solved[:, j]).any() else round(float(solved[:, j].mean()), 6),
               "rank_interval": [float(bounds[j, 0]), float(bounds[j, 1])]}
        missing = {}
        if acted[:, j].any():
            row.update(wins=vs["wins"], losses=vs["losses"], ties=vs["ties"])
            row["break_even"] = break_even(cost[:, j] - cost[:, ref], turns, acted[:, j])
        else:
            why = "noop is the reference" if name == REFERENCE else "the policy acted on no unit"
            missing["wins"] = missing["losses"] = missing["ties"] = missing["break_even"] = why
        if clair is not None and clair["saving_usd"] > 0:
            row["oracle_gap"] = round(float((cost[:, ref].sum() - cost[:, j].sum()) / clair["saving_usd"]), 6)
            interval = gap_interval(gaps[:, j]) if gaps is not None else None
            if interval is not None:
                row["oracle_gap_interval"] = interval
        else:
            missing["oracle_gap"] = ("the clairvoyant optimum plans from a transcript; these units are seeds"
                                     if clair is None else "the clairvoyant optimum saves nothing on these units")
        if missing:
            row["unobservable"] = missing
        rows.append(row)
    pairs = []
    for j, name in enumerate(policies):
        for k, other in enumerate(policies):
            if k <= j:
                continue
            either = acted[:, j] | acted[:, k]
            pairs.append({"policy": name, "against": other, **aggregate.paired_comparison(
                cost[:, j], cost[:, k], either, cost[:, ref], (name, "", "against", other))})
    if clair is None:
        unobservable["oracle_gap"] = "the clairvoyant optimum plans from a transcript; these units are seeds"
    notes = []
    if len(units) < FEW_UNITS:
        notes.append(f"only {len(units)} unit(s): every draw resamples these, so the intervals and p_best say how "
                     "the policies rank on units like these few, not on others")
    return Recommendation(objective, recommendation, winner, tied, draws, [u.name for u in units], assumptions,
                          rows, pairs, sensitivity(units, policies, assumptions, objective, top), clair,
                          unobservable, meta or {}, notes)


def _clairvoyant(units: list[UnitRuns]) -> dict | None:
    """The optimum's totals at the assumptions' values, when every unit has one."""
    if any(u.clairvoyant is None for u in units):
        return None
    total = noop = predicted = 0.0
    for u in units:
        p = u.billing.pricing
        total += round(float(reprice.dollars(u.clairvoyant.stream, p, [p.reuse], [True])[0]), 9)
        noop += round(float(reprice.dollars(u.runs[REFERENCE][(CENTRE, CENTRE)].stream, p, [p.reuse], [True])[0]), 9)
        predicted += u.predicted or 0.0
    return {"total_usd": _usd(total), "saving_usd": _usd(noop - total), "predicted_usd": _usd(predicted),
            "acted_share": round(sum(u.clairvoyant.acted for u in units) / len(units), 6)}


# -- files -----------------------------------------------------------------------------------------------------
def write(out: Path, rec: Recommendation) -> list[Path]:
    """``recommend.csv`` (one row per pair of policies) and ``recommend.json``, each written atomically."""
    out = Path(out)
    rows = []
    for r in rec.pairs:
        rows.append([r["policy"], r["against"], r["units"], r["total_usd"], r["against_usd"], r["diff_usd"],
                     r["interval"][0], r["interval"][1], r["median_diff"], r["mean_diff"], r["acted"], r["wins"],
                     r["losses"], r["ties"]])
    atomic.write_csv(out / CSV_FILE, PAIR_COLUMNS, rows)
    atomic.write_json(out / JSON_FILE, rec.to_json())
    return [out / CSV_FILE, out / JSON_FILE]
