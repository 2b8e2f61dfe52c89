"""Every policy on the same units, side by side: the leaderboard.

A *unit* is one imported transcript (each policy replays it on its recorded
runtime: the model that ran it sets prices and window, its clock sets time)
or one seed of a synthetic scenario (each policy meets the same workload). An
*entry* is a policy at a *setting*: its documented setting (the scenario as
given, ``setting`` empty) or a point of a ``--grid`` (``setting`` names it,
``key=value[,key=value]``), so that policies can be compared at matched
acting thresholds (``acting_threshold``: the utilization, in tokens, at which
the entry starts to act; the median over the units where it differs).

For every unit and entry the study takes a few figures from the run's
metrics, some relative to ``noop`` at its documented setting on the same unit,
and the dollars against the bill the transcript records. It reduces them per
entry over the units: median, mean and the bootstrap 95% interval of the
median (:func:`prunesim.studies.aggregate.describe`). Counts that are zero on
most units (re-retrievals, lost constraints, unrecorded evictions, forced
truncations) are reported by their mean with the bootstrap interval of the
mean (``interval`` = ``mean``) and by the share of units with at least one
(figure ``<name>_share``, with its Wilson interval: ``interval`` = ``wilson``).

Files written in the output folder: ``runs.csv`` (one row per unit and entry,
with the unit's turns), ``leaderboard.csv`` (tidy: one row per entry and
figure) and ``leaderboard.json`` (what was run).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from prunesim import __version__
from prunesim.errors import UserError
from prunesim.io import atomic
from prunesim.model.scenario import Scenario
from prunesim.observe.metrics import outcome as outcome_metrics
from prunesim.observe.metrics.intervals import wilson
from prunesim.runner import run_one
from prunesim.studies import aggregate
from prunesim.studies.aggregate import describe
from prunesim.studies.transcript_replay import iter_sources, replay, replay_scenario

REFERENCE = "noop"  # every ratio is against this policy, at its documented setting, on the same unit
RUNS_FILE = "runs.csv"
TABLE_FILE = "leaderboard.csv"
META_FILE = "leaderboard.json"
OUTPUT_FILES = (RUNS_FILE, TABLE_FILE, META_FILE)
TABLE_COLUMNS = ("policy", "setting", "acting_threshold", "figure", "n", "median", "mean", "ci_low", "ci_high",
                 "interval")


@dataclass(frozen=True)
class Figure:
    name: str
    unit: str
    definition: str


FIGURES = (
    Figure("input_ratio", "ratio", "input_tokens_billed / noop's on the same unit: the prompt tokens billed, "
           "the policy's own calls (prune passes, compactions) included"),
    Figure("total_ratio", "ratio", "(input_tokens_billed + output_tokens_billed) / noop's on the same unit"),
    Figure("cost_ratio", "ratio", "cost_usd / noop's on the same unit: dollars at the recorded model's prices "
           "(synthetic runs: the scenario's [pricing]), the prompt cache, the policy's own calls and, on "
           "transcripts, the agent's refetches included"),
    Figure("cost_usd", "USD", "cost_usd: the replay's dollars, as cost_ratio counts them"),
    Figure("recorded_cost_usd", "USD", "the bill the transcript records: its recorded cost when every call "
           "records one, else its recorded token counts at the model's list prices; empty when a call records "
           "no usage (and for synthetic runs)"),
    Figure("cost_vs_recorded", "ratio", "cost_usd / recorded_cost_usd: for noop, how closely the replay "
           "reproduces what was really billed (prunesim fidelity judges it, cross-validated)"),
    Figure("refetches", "calls", "refetches: tool calls a replayed agent made again because the policy had "
           "removed content a recorded call then used (0 with --reaction none and on synthetic scenarios)"),
    Figure("decision_tokens", "tokens", "decision_tokens_billed: prompt and output tokens of prune passes and "
           "compactions"),
    Figure("peak_utilization", "tokens", "peak_utilization"),
    Figure("re_retrievals", "runs", "transcripts: repeats_after_prune (a repeated tool call whose earlier content "
           "the policy had removed); synthetic scenarios: re_retrievals"),
    Figure("lost_constraints", "spans", "lost_constraints"),
    Figure("unrecorded_evictions", "spans", "unrecorded_evictions"),
    Figure("forced_truncations", "appends", "forced_truncations"),
    Figure("acted", "bool", "1 when the policy changed the window on the unit (a prune pass, a non-model "
           "eviction, a clearing, a compaction or a warning), else 0: its mean is the share of units it acted on"),
)
# What the policy did to the agent, where an agent model ran (prunesim.observe.metrics.outcome names and defines
# each once), and how each is reduced over units: a median, a count's mean and share, a yes/no's share (Wilson),
# a probability's mean (the expected share of tasks solved). A figure no unit reports is left out.
OUTCOME_REDUCERS = {"agent_calls": "median", "turns_over_recorded": "median", "redos": "count", "capped": "share",
                    "task_success": "mean"}
OUTCOME_FIGURES = tuple(Figure(m.name, m.unit, m.definition) for m in outcome_metrics.DEFINITIONS
                        if m.name in OUTCOME_REDUCERS)
# Counts that are zero on most units: a median of 0 in [0, 0] says nothing, their mean and share do.
COUNT_FIGURES = ("re_retrievals", "lost_constraints", "unrecorded_evictions", "forced_truncations", "redos")
SHARE_SUFFIX = "_share"
# What the policy did, from the metrics: any of these above zero means it changed the window.
ACTIONS = ("passes", "non_model_evictions", "clearings", "compactions", "memory_warnings")
FIGURE_NAMES = tuple(f.name for f in FIGURES)
RUN_COLUMNS = ("unit", "policy", "setting", "acting_threshold", "turns", *FIGURE_NAMES)


@dataclass(frozen=True)
class Entry:
    """A policy at one setting: the scenario it runs under and the name of that setting ('' documented)."""

    policy: str
    setting: str
    scenario: Scenario

    @property
    def key(self) -> tuple[str, str]:
        return self.policy, self.setting


@dataclass
class Unit:
    """One transcript or seed, and each entry's run summary on it (by (policy, setting))."""

    name: str
    summaries: dict[tuple[str, str], dict]
    warnings: tuple[str, ...] = ()  # the import's and the replay's warnings about the transcript
    recorded_cost: float | None = None  # the bill the transcript records


def with_reference(policies: list[str]) -> list[str]:
    """The policies to run: ``noop`` first (the reference), then the others in the order given."""
    return [REFERENCE, *(p for p in policies if p != REFERENCE)]


def entries_of(base: Scenario, policies: list[str], axes: dict | None = None) -> list[Entry]:
    """Every policy at its documented setting (noop first), then at each point of the grid that concerns it."""
    out = [Entry(p, "", base) for p in with_reference(policies)]
    if not axes:
        return out
    from prunesim.io.atomic import format_cell
    from prunesim.studies.grid import split_axis
    from prunesim.studies.sweep import plan_sweep

    plan = plan_sweep(base, axes, with_reference(policies), [0])  # validates every point before any run
    seen = {e.key for e in out}
    for spec in plan.runs:
        point = plan.points[spec.point]
        # An axis the policy does not read (the scenario's trigger for clearing, say) is no setting of it.
        setting = ",".join(f"{split_axis(k)[1]}={format_cell(v)}" for k, v in point.items()
                           if reads(spec.policy, split_axis(k)[1]))
        if setting and (spec.policy, setting) not in seen:
            seen.add((spec.policy, setting))
            out.append(Entry(spec.policy, setting, plan.scenarios[spec.point]))
    return out


def reads(policy: str, param: str) -> bool:
    """Whether a parameter can change a policy's runs: a parameter some policy declares reading
    (``Policy.reads``) changes only the policies that read it; any other (window, pricing, ...) changes all."""
    from prunesim.policies import REGISTRY, get_policy
    from prunesim.studies.grid import covers

    cls = get_policy(policy)
    specific = [p for c in (*REGISTRY.values(), cls) for p in c.parameters()]
    return not any(covers(p, param) for p in specific) or any(covers(p, param) for p in cls.parameters())


def recorded_bill(data, scenario: Scenario) -> float | None:
    """What the transcript records it cost (see FIGURES), priced as the replay on ``scenario`` bills it."""
    from prunesim.studies import cache_fidelity
    from prunesim.studies.replay_identity import recorded_run

    run = recorded_run(data, scenario.pricing.model)
    return None if run is None else cache_fidelity.reference_cost(run, scenario.pricing)


def transcript_units(folder: Path, entries: list[Entry], seed: int | None, tools: set[str],
                     **reading) -> Iterator[Unit | tuple[Path, UserError]]:
    """One unit per workload in ``folder`` (read one at a time), or (file, error) for a file that failed.

    A file's units are given once all its runs went through: a JSON-lines file with a bad run gives only
    its error, as a bad file of one run. ``tools`` collects the tool names the transcripts use; ``reading``
    is how transcripts are read (``tokenizer``, ``calibration``, ``sidechains``: see :func:`iter_sources`).
    """
    held: list[Unit] = []
    current = dead = None
    for path, data in iter_sources([folder], **reading):
        if path != current:
            yield from held
            held, current = [], path
        if path == dead:
            continue
        if isinstance(data, UserError):
            held, dead = [], path
            yield path, data
            continue
        tools.update(p["tool"] for p in data.parts if p.get("tool"))
        summaries, warnings = {}, dict.fromkeys(data.warnings)  # each of its replays' warnings once
        try:
            built: dict[int, Scenario] = {}  # each setting's replay scenario, built once per transcript
            for entry in entries:
                if id(entry.scenario) not in built:
                    built[id(entry.scenario)] = replay_scenario(entry.scenario, data)
                result, _ = replay(data, entry.scenario, entry.policy, seed, trace="none",
                                   scenario=built[id(entry.scenario)])
                summaries[entry.key] = result.summary
                warnings.update(dict.fromkeys(result.warnings))
                if entry.key == (REFERENCE, ""):
                    bill = recorded_bill(data, result.scenario)
                del result
        except UserError as err:  # the transcript's model or window: this file's error, the others go on
            held, dead = [], path
            yield path, err
            continue
        held.append(Unit(data.name, summaries, tuple(warnings), bill))
    yield from held


def synthetic_units(entries: list[Entry], seeds: list[int]) -> Iterator[Unit]:
    """One unit per seed: every entry on its scenario's workload for that seed."""
    for seed in seeds:
        yield Unit(f"seed {seed}", {e.key: run_one(e.scenario, e.policy, seed, trace="none").summary
                                    for e in entries})


def unit_rows(unit: Unit, entries: list[Entry], transcripts: bool) -> list[dict]:
    """The figures of each entry on one unit."""
    ref = unit.summaries[(REFERENCE, "")]
    ref_input = ref["input_tokens_billed"]
    ref_total = ref_input + ref["output_tokens_billed"]
    ref_cost = ref["cost_usd"]
    bill = unit.recorded_cost
    rows = []
    for entry in entries:
        s = unit.summaries[entry.key]
        rows.append({
            "unit": unit.name,
            "policy": entry.policy,
            "setting": entry.setting,
            "acting_threshold": None if entry.policy == REFERENCE else s.get("acting_trigger"),
            "turns": s["turns"],
            "input_ratio": s["input_tokens_billed"] / ref_input if ref_input else None,
            "total_ratio": (s["input_tokens_billed"] + s["output_tokens_billed"]) / ref_total if ref_total else None,
            "cost_ratio": s["cost_usd"] / ref_cost if ref_cost else None,
            "refetches": s["refetches"],
            "cost_usd": s["cost_usd"],
            "recorded_cost_usd": bill,
            "cost_vs_recorded": s["cost_usd"] / bill if bill else None,
            "decision_tokens": s["decision_tokens_billed"],
            "peak_utilization": s["peak_utilization"],
            "re_retrievals": s["repeats_after_prune"] if transcripts else s["re_retrievals"],
            "lost_constraints": s["lost_constraints"],
            "unrecorded_evictions": s["unrecorded_evictions"],
            "forced_truncations": s["forced_truncations"],
            "acted": int(any(s[a] for a in ACTIONS)),
            **{f.name: _number(s.get(f.name)) for f in OUTCOME_FIGURES},
        })
    return rows


def _number(value):
    """A figure's value for the table (a yes/no as 0 or 1); None where the run does not report it."""
    return int(value) if isinstance(value, bool) else value


def outcome_names(rows: list[dict]) -> tuple[str, ...]:
    """The outcome figures some row reports (an agent model ran on its unit)."""
    return tuple(f.name for f in OUTCOME_FIGURES if any(r.get(f.name) is not None for r in rows))


def mean_interval(values: list[float], key: tuple) -> tuple[float, float]:
    """Percentile-bootstrap 95% interval of the mean, drawn from the generator of ``key`` (as describe() draws)."""
    x = np.asarray(values, dtype=float)
    rng = aggregate._group_rng(aggregate.SEED, tuple(atomic.format_cell(k) for k in key))
    means = np.sort(x[rng.integers(0, len(x), size=(aggregate.RESAMPLES, len(x)))].mean(axis=1))
    tail = aggregate.tail_share(aggregate.CONFIDENCE)
    return (float(means[aggregate._rank(tail, len(means))]), float(means[aggregate._rank(1 - tail, len(means))]))


def reduce(rows: list[dict], entries: list[Entry]) -> list[dict]:
    """Per entry and figure: n, median, mean and an interval over the units (module docstring)."""
    table = []
    for entry in entries:
        mine = [r for r in rows if (r["policy"], r["setting"]) == entry.key]
        acting = [r["acting_threshold"] for r in mine if r["acting_threshold"] is not None]
        threshold = float(np.median(acting)) if acting else None
        where = {"policy": entry.policy, "setting": entry.setting,
                 "acting_threshold": int(threshold) if threshold is not None and threshold.is_integer() else threshold}
        for figure in (*FIGURE_NAMES, *outcome_names(mine)):
            values = [r[figure] for r in mine if r[figure] is not None]
            stats = describe(values, (entry.policy, entry.setting, figure))
            if stats is None:
                continue
            reducer = OUTCOME_REDUCERS.get(figure)
            if reducer in ("share", "mean"):
                table.append(_mean_row(where, figure, values, stats, entry, reducer))
                continue
            if figure not in COUNT_FIGURES:
                table.append({**where, "figure": figure, **stats, "interval": "median"})
                continue
            low, high = mean_interval(values, (entry.policy, entry.setting, figure))
            table.append({**where, "figure": figure, **stats, "ci_low": low, "ci_high": high, "interval": "mean"})
            hits = sum(1 for v in values if v > 0)
            share = hits / len(values)
            w_low, w_high = wilson(hits, len(values))
            table.append({**where, "figure": figure + SHARE_SUFFIX, "n": len(values), "median": share, "mean": share,
                          "ci_low": w_low, "ci_high": w_high, "interval": "wilson"})
    return table


def _mean_row(where: dict, figure: str, values: list, stats: dict, entry: Entry, reducer: str) -> dict:
    """A yes/no figure's share of units with its Wilson interval, or a probability's mean with the bootstrap
    interval of the mean."""
    if reducer == "share":
        hits = sum(1 for v in values if v)
        low, high = wilson(hits, len(values))
        share = hits / len(values)
        return {**where, "figure": figure, "n": len(values), "median": share, "mean": share, "ci_low": low,
                "ci_high": high, "interval": "wilson"}
    low, high = mean_interval(values, (entry.policy, entry.setting, figure))
    return {**where, "figure": figure, **stats, "ci_low": low, "ci_high": high, "interval": "mean"}


def write(out: Path, meta: dict, rows: list[dict], table: list[dict]) -> list[Path]:
    """The three files, each written atomically (runs first, the table last)."""
    out = Path(out)
    columns = (*RUN_COLUMNS, *outcome_names(rows))
    atomic.write_csv(out / RUNS_FILE, columns, (["" if r[c] is None else r[c] for c in columns] for r in rows))
    present = set(outcome_names(rows))
    figures = {f.name: {"unit": f.unit, "definition": f.definition} for f in (*FIGURES, *OUTCOME_FIGURES)
               if f in FIGURES or f.name in present}
    for name in (n for n in COUNT_FIGURES if n in figures):
        figures[name + SHARE_SUFFIX] = {"unit": "share", "definition": f"share of units with {name} > 0 "
                                        "(interval: Wilson 95%)"}
    atomic.write_json(out / META_FILE, {**meta, "prunesim_version": __version__, "reference": REFERENCE,
                                        "figures": figures})
    atomic.write_csv(out / TABLE_FILE, TABLE_COLUMNS, (["" if r[c] is None else r[c] for c in TABLE_COLUMNS]
                                                       for r in table))
    return [out / RUNS_FILE, out / META_FILE, out / TABLE_FILE]
