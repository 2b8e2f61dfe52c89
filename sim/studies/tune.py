"""prunesim tune: a policy's settings searched on half of the units, the choice judged on the other half.

The units (transcripts, or seeds of a synthetic scenario) are split once, by
``seed``, into a training half (the larger, when odd) and a held-out half.
optuna's TPE sampler, seeded with ``seed``, searches the policy's settings on the
training half: each trial replays every training unit at one setting and scores
it by the objective (their total dollars). The search space is what the policy's
tables declare on their fields (:func:`prunesim.model.scenario.searched`), each
range around the value the documented setting gives (a range that left it out
is stretched to include it), and the documented setting is trial 0. The chosen
setting, the training half's best, is then replayed on the held-out half beside
the documented setting: the held-out difference of their totals with its paired
bootstrap 95% interval (:func:`~prunesim.studies.aggregate.paired_total_interval`),
and wins, losses and ties per unit. The verdict says the documented setting is
as good unless that interval lies below zero.

Same units, policy, trials and seed: the same trials, the same choice, the same
files. optuna is an optional dependency (``pip install prunesim[tune]``),
imported only here, when a tuning runs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from prunesim import __version__
from prunesim.errors import UserError
from prunesim.io import atomic
from prunesim.model.scenario import Scenario
from prunesim.policies import get_policy
from prunesim.policies.base import resolve_table
from prunesim.studies import aggregate

TRIALS = 50
MAX_TRIALS = 10_000
JSON_FILE = "tune.json"
TRIALS_FILE = "trials.csv"
PER_SOLVED = "dollars-per-solved"
OBJECTIVES = ("dollars", PER_SOLVED)
TIE_SHARE = 0.001  # as recommend's: a held-out difference within 0.1% of the documented bill is a tie


@dataclass(frozen=True)
class Dimension:
    """One setting searched: its dotted key, its range, whether whole, and the documented value."""

    key: str
    low: float
    high: float
    integer: bool
    documented: float
    fixed: dict = field(default_factory=dict)  # keys set with it (a threshold's unit)


def search_space(policy: str, scenario: Scenario, window: int) -> list[Dimension]:
    """The settings of ``policy`` its tables declare a search range for, on a run of ``window`` tokens."""
    cls = get_policy(policy)
    out = []
    reads = cls.parameters()
    if "trigger" in reads:
        spec = _spec(Scenario, "trigger")
        out.append(_dimension("trigger", spec, scenario.trigger, window))
    for name, table_cls in cls.tables.items():
        if not dataclasses.is_dataclass(table_cls):
            continue
        table = getattr(scenario, name, None) or table_cls()
        presets = getattr(cls, "presets", {})
        if presets and hasattr(table, "preset"):
            table = resolve_table(table, presets, cls.preset or table.preset)
        for f in dataclasses.fields(table_cls):
            spec = f.metadata.get("search")
            if spec is None:
                continue
            fixed = {}
            if "by_unit" in spec:
                unit = getattr(table, "unit", None)
                if unit not in spec["by_unit"]:
                    continue
                spec = spec["by_unit"][unit]["search"]
                fixed = {f"{name}.unit": unit}
            documented = getattr(table, f.name)
            if documented is None:
                continue
            out.append(_dimension(f"{name}.{f.name}", spec, documented, window, fixed))
    return out


def _spec(cls, name: str) -> dict:
    return next(f.metadata["search"] for f in dataclasses.fields(cls) if f.name == name)


def _dimension(key: str, spec: dict, documented: float, window: int, fixed: dict | None = None) -> Dimension:
    scale = window if spec["per_window"] else 1
    low, high = spec["low"] * scale, spec["high"] * scale
    if spec["integer"]:
        low, high = math.floor(low), math.ceil(high)
    return Dimension(key, min(low, documented), max(high, documented), spec["integer"], documented, fixed or {})


def split(names: list[str], seed: int) -> tuple[list[int], list[int]]:
    """Indices of the training and held-out halves: a seeded shuffle, the larger half for training."""
    order = np.random.default_rng(np.random.SeedSequence([seed, 0x7E5E])).permutation(len(names))
    cut = (len(names) + 1) // 2
    return sorted(order[:cut].tolist()), sorted(order[cut:].tolist())


@dataclass
class TuneResult:
    policy: str
    objective: str
    space: list[Dimension]
    trials: list[dict]
    train: list[str]
    held_out: list[str]
    documented: dict
    chosen: dict
    comparison: dict
    verdict: str
    seed: int
    meta: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"experimental": True, **self.meta, "policy": self.policy, "objective": self.objective,
                "seed": self.seed, "trials": len(self.trials),
                "failed_trials": sum(t["state"] != "complete" for t in self.trials),
                "space": [dataclasses.asdict(d) for d in self.space], "train_units": self.train,
                "held_out_units": self.held_out, "documented": self.documented, "chosen": self.chosen,
                "held_out": self.comparison, "verdict": self.verdict, "prunesim_version": __version__}


def tune(policy: str, names: list[str], bills: Callable[[dict, list[int]], np.ndarray], space: list[Dimension], *,
         trials: int = TRIALS, seed: int = 0, objective: str = "dollars") -> TuneResult:
    """Search on the training half, judge on the held-out half (module docstring).

    ``bills(overrides, units)``: the dollars of each listed unit with the policy at the setting ``overrides`` (an
    empty dict: the documented setting), and for ``dollars-per-solved`` also each run's predicted solved share
    (a pair of arrays: :func:`replay_bills` and :func:`seed_bills` give it); it raises :class:`UserError` for a
    setting a run refuses.

    ``dollars-per-solved`` scores a setting by its dollars over the sum of its runs' solved shares; the held-out
    comparison is then the difference of the two settings' dollars per solved task, with the paired bootstrap 95%
    interval of that difference of ratios (:func:`paired_ratio_interval`)."""
    if objective not in OBJECTIVES:
        raise UserError("--objective", objective, f"unknown objective (known: {', '.join(OBJECTIVES)})")
    if not 1 <= trials <= MAX_TRIALS:
        raise UserError("--trials", str(trials), f"must be from 1 to {MAX_TRIALS:,}")
    if len(names) < 2:
        raise UserError("tune", None, f"needs at least 2 units (one to search on, one to judge on); got {len(names)}")
    if not space:
        raise UserError("--policy", policy, "declares no setting to search (no field of its tables has a range)")
    optuna = _optuna()
    train, held = split(names, seed)
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
    study.enqueue_trial({d.key: d.documented for d in space})
    log = []
    for number in range(trials):
        trial = study.ask()
        params = {d.key: (trial.suggest_int(d.key, int(d.low), int(d.high)) if d.integer
                          else trial.suggest_float(d.key, d.low, d.high)) for d in space}
        try:
            value = _score(bills(_overrides(space, params), train), objective)
        except SolvedShareMissing:
            raise
        except UserError as err:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            log.append({"number": number, "state": "failed", "params": params, "train_usd": None,
                        "why": err.problem})
            continue
        study.tell(trial, value)
        log.append({"number": number, "state": "complete", "params": params, "train_usd": round(value, 9)})
    done = [t for t in log if t["state"] == "complete"]
    if not done:
        raise UserError("--policy", policy, f"every one of the {trials} trials failed: {log[0].get('why')}")
    best = min(done, key=lambda t: (t["train_usd"], t["number"]))  # the earliest of equals: trial 0 when tied
    documented_held = bills({}, held)
    chosen_held = bills(_overrides(space, best["params"]), held)
    if objective == PER_SOLVED:
        (documented_held, documented_solved), (chosen_held, chosen_solved) = documented_held, chosen_held
    diff = chosen_held - documented_held
    low, high = aggregate.paired_total_interval(diff, ("tune", policy, seed))
    tol = TIE_SHARE * documented_held
    comparison = {"units": len(held), "documented_usd": round(float(documented_held.sum()), 9),
                  "chosen_usd": round(float(chosen_held.sum()), 9), "diff_usd": round(float(diff.sum()), 9),
                  "interval": [round(low, 9), round(high, 9)], "wins": int((diff < -tol).sum()),
                  "losses": int((diff > tol).sum()), "ties": int((np.abs(diff) <= tol).sum())}
    if objective == PER_SOLVED:
        a = float(documented_held.sum() / documented_solved.sum())
        b = float(chosen_held.sum() / chosen_solved.sum())
        low, high = paired_ratio_interval(chosen_held, chosen_solved, documented_held, documented_solved,
                                          ("tune", policy, seed, PER_SOLVED))
        comparison.update({"documented_per_solved": round(a, 9), "chosen_per_solved": round(b, 9),
                           "diff_per_solved": round(b - a, 9), "interval_per_solved": [round(low, 9),
                                                                                       round(high, 9)],
                           "documented_solved": round(float(documented_solved.sum()), 6),
                           "chosen_solved": round(float(chosen_solved.sum()), 6)})
    documented = {"params": {d.key: d.documented for d in space}, "train_usd": log[0]["train_usd"]}
    chosen = {"params": best["params"], "train_usd": best["train_usd"], "trial": best["number"]}
    return TuneResult(policy, objective, space, log, [names[i] for i in train], [names[i] for i in held],
                      documented, chosen, comparison, _verdict(best, comparison, objective), seed)


def _score(billed, objective: str) -> float:
    """A trial's value: its total dollars, or those over the sum of its runs' solved shares."""
    if objective == "dollars":
        return float(np.asarray(billed).sum())
    usd, solved = billed
    return float(usd.sum() / solved.sum())


def paired_ratio_interval(usd_a, solved_a, usd_b, solved_b, key: tuple) -> tuple[float, float]:
    """Bootstrap 95% interval of sum(usd_a) / sum(solved_a) - sum(usd_b) / sum(solved_b) over the same units,
    resampled whole (each unit's four values together), widened about the observed difference as
    :func:`prunesim.studies.aggregate.paired_total_interval` widens a sum's."""
    usd_a, solved_a, usd_b, solved_b = (np.asarray(x, dtype=float) for x in (usd_a, solved_a, usd_b, solved_b))
    n = len(usd_a)
    rng = aggregate._group_rng(aggregate.SEED, tuple(atomic.format_cell(k) for k in key))
    picks = aggregate.resample_units(rng, n, aggregate.RESAMPLES)
    observed = usd_a.sum() / solved_a.sum() - usd_b.sum() / solved_b.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        drawn = usd_a[picks].sum(1) / solved_a[picks].sum(1) - usd_b[picks].sum(1) / solved_b[picks].sum(1)
    drawn = drawn[np.isfinite(drawn)]
    return aggregate.percentile_interval(observed + aggregate.expansion(n) * (drawn - observed))


def _overrides(space: list[Dimension], params: dict) -> dict:
    out = {}
    for d in space:
        out.update(d.fixed)
        out[d.key] = params[d.key]
    return out


def _verdict(best: dict, comparison: dict, objective: str = "dollars") -> str:
    if best["number"] == 0:
        return "the documented setting is as good: no trial beat it on the training half"
    per = objective == PER_SOLVED
    low, high = comparison["interval_per_solved" if per else "interval"]
    diff, unit = (comparison["diff_per_solved"], "dollars per solved task") if per else (comparison["diff_usd"],
                                                                                         "dollars")
    if high < 0:
        return (f"the chosen setting pays on the held-out half: {diff:+.4f} {unit} "
                f"[{low:+.4f}, {high:+.4f}] against the documented setting")
    return (f"the documented setting is as good: on the held-out half the chosen setting's difference "
            f"{diff:+.4f} {unit} [{low:+.4f}, {high:+.4f}] does not lie below zero")


def _optuna():
    try:
        import optuna
    except ImportError:
        raise UserError("tune", None, "needs optuna: pip install 'prunesim[tune]'") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


TRIAL_COLUMNS = ("number", "state", "train_usd")


def write(out, result: TuneResult) -> list:
    """``trials.csv`` (one row per trial: its settings and training dollars) and ``tune.json``, atomically."""
    keys = [d.key for d in result.space]
    rows = [[t["number"], t["state"], "" if t["train_usd"] is None else t["train_usd"],
             *(t["params"][k] for k in keys)] for t in result.trials]
    atomic.write_csv(out / TRIALS_FILE, (*TRIAL_COLUMNS, *keys), rows)
    atomic.write_json(out / JSON_FILE, result.to_json())
    return [out / TRIALS_FILE, out / JSON_FILE]


def _billed(summaries: list[dict], objective: str):
    """What :func:`tune` reads of the runs: their dollars, and for ``dollars-per-solved`` their solved shares."""
    usd = np.array([s["cost_usd"] for s in summaries])
    if objective == "dollars":
        return usd
    silent = sorted({s.get("agent_profile") or "" for s in summaries if s.get("task_success") is None})
    if silent:
        from prunesim.studies.recommend import without_success

        raise SolvedShareMissing("--objective", objective, without_success(silent))
    return usd, np.array([s["task_success"] for s in summaries])


class SolvedShareMissing(UserError):
    """No solved share to score by: a refusal of the whole tuning, never one trial's failure."""


def replay_bills(datas: list, scenario_at: Callable[[dict], Scenario], policy: str, seed: int | None,
                 objective: str = "dollars"):
    """``bills`` for :func:`tune` over transcripts: each unit replayed on its recorded runtime at the setting."""
    from prunesim.studies.transcript_replay import replay

    def bills(overrides: dict, units: list[int]):
        scenario = scenario_at(overrides)
        return _billed([replay(datas[i], scenario, policy, seed, trace="none")[0].summary for i in units], objective)

    return bills


def seed_bills(scenario_at: Callable[[dict], Scenario], policy: str, seeds: list[int], objective: str = "dollars"):
    """``bills`` for :func:`tune` over seeds of a synthetic scenario."""
    from prunesim.runner import run_one

    def bills(overrides: dict, units: list[int]):
        scenario = scenario_at(overrides)
        return _billed([run_one(scenario, policy, seeds[i], trace="none").summary for i in units], objective)

    return bills
