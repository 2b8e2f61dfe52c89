"""The reacting agent fitted on real outcomes, its forecast of an arm, and the forecast's cross-validation.

* :func:`fit`: per scaffold, the agent model's parameters (:mod:`prunesim.studies.outcome_fit`) on the dev
  arms of outcome files (:mod:`prunesim.io.outcomes`), with bootstrap replicates; an :class:`AgentFit`, written
  as JSON with the digests of the files it was fitted on (``scripts/fit_agent.py`` ships one as
  ``sim/model/agent_fit.json``; :mod:`prunesim.model.agent_profiles` reads the parameters the engine takes).
* :func:`predict`: one raw arm forecast under a policy with a scaffold's fitted agent
  (:mod:`prunesim.studies.outcome_forecast`): the four figures, their intervals, both bills.
* :func:`cross_validate`: each dev arm forecast from a fit that left out every arm of its setting, beside two
  baselines (:mod:`prunesim.studies.outcome_validate`).

docs/outcomes.md says what each figure is, what the model cannot capture and the cross-validated errors.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from importlib import resources as package_files

import numpy as np
from prunesim.errors import UserError
from prunesim.io.outcomes import Arm, OutcomeFile
from prunesim.studies import outcome_forecast as forecast
from prunesim.studies import outcome_grid as grid
from prunesim.studies.outcome_arms import COUNTING, Pair, figures, kind_of, pairs, scaffold_of
from prunesim.studies.outcome_fit import SLOPE_TEST, Params, bootstrap, fit_scaffold, outcome_loglik
from prunesim.studies.outcome_runs import PairRuns, pair_runs, summarizes
from prunesim.studies.outcome_sims import instance_seed, setup, simulate
from prunesim.studies.outcome_workload import base_tokens, fit_prices, instances
from prunesim.studies.workers import refusal_in, refused, worker_start

FORMAT = 1
REPLICATES = 100
SEED = 0
FIT_FILE = "agent_fit.json"
SCRIPT = "scripts/fit_agent.py"


@dataclass
class ScaffoldFit:
    """One scaffold's fit: the point estimate, its bootstrap replicates, and the arms it stands on."""

    params: Params
    replicates: list[Params]
    arms: list[str]
    base: int  # the scaffold's base prompt (outcome_workload.base_tokens), in tokens


@dataclass
class AgentFit:
    """A fit of every scaffold the files hold, and where it came from (file names and SHA-256 digests)."""

    scaffolds: dict[str, ScaffoldFit]
    inputs: dict[str, str]
    replicates: int = REPLICATES
    seed: int = SEED
    where: str = field(default="", compare=False)

    def to_json(self) -> dict:
        """The fit file's content: date-free, the same bytes for the same inputs."""
        profiles = {}
        for name, s in self.scaffolds.items():
            p = s.params
            values = {"need_rate": p.need_rate, "need_cv": p.need_cv, "need_decay": p.need_decay,
                      "discordance": p.discordance, "lengthening_slope": p.lengthening_slope,
                      "cap_success_solved": p.cap_success_solved, "cap_success_unsolved": p.cap_success_unsolved}
            if p.summary_fidelity is not None:
                values["summary_fidelity"] = p.summary_fidelity
            profiles[name] = values
        return {
            "format": FORMAT, "script": SCRIPT, "inputs": dict(sorted(self.inputs.items())),
            "profiles": profiles,
            "outcomes": {name: {"fit": s.params.as_dict(), "arms": s.arms, "base_tokens": s.base,
                                "replicates": [r.as_dict() for r in s.replicates]}
                         for name, s in sorted(self.scaffolds.items())},
            "method": {"replicates": self.replicates, "seed": self.seed, "slope_test": SLOPE_TEST,
                       "nodes": grid.NODES.tolist(),
                       "decays": grid.DECAYS.tolist(), "fidelities": grid.FIDELITIES.tolist(),
                       "turn_edges": grid.TURN_EDGES.tolist()},
            "notes": {name: f"fitted by {SCRIPT} on {len(s.arms)} arm(s) of "
                            f"{', '.join(sorted(self.inputs))} (docs/outcomes.md)"
                      for name, s in sorted(self.scaffolds.items())},
        }

    @classmethod
    def from_json(cls, data, where: str) -> AgentFit:
        """A fit read back; one line naming ``where`` for anything that is not a fit file."""
        try:
            if data.get("format") != FORMAT:
                raise UserError(where, "format", f"expected {FORMAT} (got {data.get('format')!r})")
            scaffolds = {}
            for name, entry in data["outcomes"].items():
                if name not in COUNTING:
                    raise UserError(where, f"outcomes.{name}", f"unknown scaffold (known: {', '.join(COUNTING)})")
                scaffolds[name] = ScaffoldFit(Params.from_dict(entry["fit"]),
                                              [Params.from_dict(r) for r in entry["replicates"]],
                                              list(entry["arms"]), int(entry["base_tokens"]))
            method = data["method"]
            if method.get("decays") != grid.DECAYS.tolist() or method.get("fidelities") != grid.FIDELITIES.tolist() \
                    or method.get("nodes") != grid.NODES.tolist():
                raise UserError(where, "method", "made on another grid than this prunesim's: fit it again "
                                "(prunesim outcomes fit FILES --out ...)")
            return cls(scaffolds, dict(data["inputs"]), int(method["replicates"]), int(method["seed"]), where)
        except UserError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise UserError(where, None, f"not an agent fit file ({type(err).__name__}: {err})") from None


def shipped_fit() -> AgentFit:
    """The fit shipped with prunesim (``sim/model/agent_fit.json``)."""
    entry = package_files.files("prunesim.model").joinpath(FIT_FILE)
    if not entry.is_file():
        raise UserError(FIT_FILE, None, f"no shipped fit (run python {SCRIPT})")
    return AgentFit.from_json(json.loads(entry.read_text("utf-8")), f"the shipped {FIT_FILE}")


def read_fit(path: str) -> AgentFit:
    from prunesim.io.inputs import malformed_json, read_text

    text = read_text(path, "fit file")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise malformed_json(path, err) from None
    if not isinstance(data, dict):
        raise UserError(path, None, "not an agent fit file (a JSON object is expected)")
    return AgentFit.from_json(data, path)


# -- fitting -------------------------------------------------------------------------------------
def dev_pairs(files: Sequence[OutcomeFile]) -> list[Pair]:
    found = pairs([a for f in files for a in f.arms])
    if not found:
        raise UserError(files[0].path, None, "no policy arm with a raw arm to compare it with: nothing to fit")
    return found


def bases(found: list[Pair]) -> dict[str, int]:
    """Each scaffold's base prompt, from the raw arms of its pairs."""
    raws: dict[str, dict[tuple[str, str], Arm]] = {}
    for p in found:
        raws.setdefault(p.kind.scaffold, {})[(p.raw.file, p.raw.experiment)] = p.raw
    return {name: base_tokens(list(arms.values())) for name, arms in raws.items()}


def all_runs(found: list[Pair], jobs: int | None = None) -> list[PairRuns]:
    """Every pair's runs at the whole grid, on ``jobs`` processes (default: every core); the same runs either way."""
    jobs = jobs or os.cpu_count() or 1
    base = bases(found)
    each = [base[p.kind.scaffold] for p in found]
    if jobs <= 1 or len(found) <= 1:
        return [pair_runs(p, b) for p, b in zip(found, each, strict=True)]
    workers = min(jobs, len(found))
    with ProcessPoolExecutor(max_workers=workers, initializer=worker_start) as pool:
        try:
            return list(pool.map(pair_runs, found, each))
        except OSError as err:  # fork() refused a worker (workers.py): named as --jobs
            if refusal_in(err) is None:
                raise
            raise refused(err, jobs, workers, len(pool._processes or {})) from None


def fit_from_runs(runs: list[PairRuns], inputs: dict[str, str], replicates: int = REPLICATES,
                  seed: int = SEED) -> AgentFit:
    scaffolds = {}
    for name in sorted({r.scaffold for r in runs}):
        mine = [r for r in runs if r.scaffold == name]
        scaffolds[name] = ScaffoldFit(fit_scaffold(mine), bootstrap(mine, replicates, seed, name),
                                      [r.pair.arm.experiment for r in mine], mine[0].base)
    return AgentFit(scaffolds, inputs, replicates, seed)


def fit(files: Sequence[OutcomeFile], replicates: int = REPLICATES, seed: int = SEED,
        jobs: int | None = None) -> AgentFit:
    """Fit every scaffold the files hold (module docstring)."""
    runs = all_runs(dev_pairs(files), jobs)
    return fit_from_runs(runs, {os.path.basename(f.path): f.sha256 for f in files}, replicates, seed)


# -- forecasting ---------------------------------------------------------------------------------
def scaffold_fit(fitted: AgentFit, scaffold: str) -> ScaffoldFit:
    if scaffold not in fitted.scaffolds:
        raise UserError("--agent", scaffold, f"the fit ({fitted.where or 'given'}) has no arm of this scaffold "
                        f"(it has: {', '.join(sorted(fitted.scaffolds)) or 'none'})")
    return fitted.scaffolds[scaffold]


def noop_records(raw: Arm, profile: str, base: int) -> np.ndarray:
    """The raw arm's instances with no policy and no need: the runs the bills are calibrated on."""
    inst = instances(raw, base)
    seeds = np.array([instance_seed(i) for i in raw.instances], dtype=np.uint64)
    return simulate(inst, seeds, setup("noop", None, profile), np.zeros(1), 1.0, 0.0)[:, 0]


def predict(raw: Arm, policy: str, profile: str, fitted: AgentFit, sets: dict | None = None, seed: int = SEED,
            cache_read: float = forecast.CACHE_READ, engine: bool = False) -> dict:
    """Forecast the arm ``policy`` would make of the raw arm ``raw`` with ``profile``'s fitted agent."""
    sf = scaffold_fit(fitted, profile)
    s = setup(policy, sets, profile)
    inst = instances(raw, sf.base)
    seeds = np.array([instance_seed(i) for i in raw.instances], dtype=np.uint64)
    bill = forecast.bills(raw, noop_records(raw, profile, sf.base), fit_prices(raw), cache_read)
    tables, made = {}, {}
    for point in forecast.needed(sf.params, sf.replicates):
        decay, fid = forecast.grid_values(point)
        key = point if summarizes(s) else (point[0], 0)  # a policy that writes no summary: fidelity changes nothing
        if key not in made:
            made[key] = forecast.run_table(simulate(inst, seeds, s, grid.NODES, decay, fid, engine), profile, bill)
        tables[point] = made[key]
    out = forecast.summarize(raw, inst, tables, sf.params, sf.replicates, seed)
    return {"n": raw.n, **out, "raw": figures(raw, profile), "bills": bill.as_dict(), "grid_points": len(made),
            "fit": {"profile": profile, **sf.params.as_dict(), "replicates": len(sf.replicates),
                    "source": fitted.where, "inputs": fitted.inputs},
            "path": "engine" if engine or s.fast is None else "fast",
            "failed_to_start": raw.failed_to_start}


def check_scaffold(raw: Arm, profile: str) -> None:
    """A raw arm forecast with another scaffold's agent is refused: the figures count turns the scaffold's way."""
    try:
        own = scaffold_of(raw)
    except UserError:
        return
    if own != profile:
        raise UserError("--agent", profile, f"experiment {raw.experiment!r} is an arm of {own}")
    if kind_of(raw).strategy in ("masking", "summary"):
        raise UserError("--experiment", raw.experiment, "is not a raw arm (a forecast starts from the full-context "
                        "runs)")


# -- cross-validation ----------------------------------------------------------------------------
def forecast_from_runs(pr: PairRuns, sf: ScaffoldFit, seed: int, cache_read: float = forecast.CACHE_READ) -> dict:
    """A held-out pair's forecast from its runs at the grid (no run made again)."""
    raw = pr.pair.raw
    bill = forecast.bills(raw, noop_records(raw, pr.scaffold, pr.base), fit_prices(raw), cache_read)
    tables = {}
    for d, f in forecast.needed(sf.params, sf.replicates):
        tables[(d, f)] = forecast.run_table(pr.records[:, d, min(f, pr.fidelities - 1)].astype(float), pr.scaffold,
                                            bill)
    return forecast.summarize(raw, pr.inst, tables, sf.params, sf.replicates, seed)


def cross_validate(files: Sequence[OutcomeFile], replicates: int = REPLICATES, seed: int = SEED,
                   jobs: int | None = None, runs: list[PairRuns] | None = None) -> dict:
    """Leave each setting out (an arm and its twins: the same scaffold, model, strategy and window on other
    instances), fit the rest of its scaffold, forecast it, and judge (:mod:`prunesim.studies.outcome_validate`)."""
    from prunesim.studies import outcome_validate as validate

    runs = runs if runs is not None else all_runs(dev_pairs(files), jobs)
    rows = []
    settings = list(dict.fromkeys(r.pair.kind.setting for r in runs))
    for setting in settings:
        held = [r for r in runs if r.pair.kind.setting == setting]
        train = [r for r in runs if r.scaffold == held[0].scaffold and r.pair.kind.setting != setting]
        if not train:
            continue
        sf = ScaffoldFit(fit_scaffold(train), bootstrap(train, replicates, seed, held[0].scaffold),
                         [r.pair.arm.experiment for r in train], train[0].base)
        others = [r.pair for r in runs if r.pair.kind.setting != setting]
        for pr in held:
            row = validate.judge(pr.pair, forecast_from_runs(pr, sf, seed), others, seed)
            row["fit"] = sf.params.as_dict()
            row["fitted_on"] = sf.arms  # never the held-out arm nor its twin (tests/test_outcome_validate.py)
            row["outcome_loglik"] = outcome_loglik(pr, sf.params)
            rows.append(row)
    return {"rows": rows, "score": validate.score(rows), "replicates": replicates, "seed": seed,
            "inputs": {os.path.basename(f.path): f.sha256 for f in files}}
