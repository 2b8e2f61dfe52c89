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

Every unit names the runtime it was billed on (``model``, ``price_table`` and
the values its recording did not give, ``not_recorded``:
:mod:`prunesim.io.settings`). Dollars are given twice: as billed with the
prompt cache (``cost_usd``) and as if nothing were cached
(``uncached_cost_usd``): a policy that rewrites the prefix (clearing, masking,
compaction) can save with one and lose with the other, and
:func:`cache_assumption` says where the sign or the ranking depends on it. A
figure no unit can move (:mod:`prunesim.studies.observable`) is left out, and
named as unobservable with the reason.

Files written in the output folder: ``runs.csv`` (one row per unit and entry,
with the unit's turns), ``leaderboard.csv`` (tidy: one row per entry and
figure) and ``leaderboard.json`` (what was run).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from warnings import warn

import numpy as np
from prunesim import __version__
from prunesim.errors import UserError
from prunesim.io import atomic, settings
from prunesim.io.transcripts.identity import Seen
from prunesim.model.scenario import Scenario
from prunesim.observe.metrics import outcome as outcome_metrics
from prunesim.observe.metrics.intervals import wilson
from prunesim.runner import run_one
from prunesim.studies import aggregate, observable
from prunesim.studies.aggregate import describe
from prunesim.studies.pool import ordered, sources_ahead
from prunesim.studies.transcript_replay import iter_sources, replay, replay_scenario

REFERENCE = "noop"  # every ratio is against this policy, at its documented setting, on the same unit
TIE_SHARE = aggregate.TIE_SHARE
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
    Figure("uncached_cost_usd", "USD", "the same calls billed as if the provider cached nothing: input_tokens_billed "
           "x the input price + output_tokens_billed x the output price"),
    Figure("uncached_cost_ratio", "ratio", "uncached_cost_usd / noop's on the same unit: the cost ratio without "
           "the prompt cache"),
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
# The runtime a unit was billed on (prunesim.io.settings): after the figures, so older columns keep their place.
RUNTIME_COLUMNS = ("model", "price_table", "not_recorded")
RUN_COLUMNS = ("unit", "policy", "setting", "acting_threshold", "turns", *FIGURE_NAMES, *RUNTIME_COLUMNS)


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
    runtime: dict | None = None  # the model, price table and unrecorded values it was billed on (Settings.runtime)
    unobservable: dict | None = None  # figure -> why it cannot move on this unit (observable.py)
    prices: dict | None = None  # (policy, setting) -> (input, output) USD per million tokens it was billed at


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
    """What the transcript records it cost (see FIGURES): its recorded cost, else its recorded tokens at the list
    prices of the model it was billed as, never at a price the user set (that bill is not the recorded one)."""
    from prunesim.studies import cache_fidelity
    from prunesim.studies.replay_identity import recorded_run

    run = recorded_run(data, scenario.pricing.model)
    if run is None:
        return None
    listed = {k: v for k, v in settings.list_prices(scenario).items()}
    return cache_fidelity.reference_cost(run, dataclasses.replace(scenario.pricing, **listed))


def transcript_units(folder: Path, entries: list[Entry], seed: int | None, tools: set[str], measure=None,
                     seen: Seen | None = None, jobs: int = 1, **reading) -> Iterator[Unit | tuple[Path, UserError]]:
    """One unit per workload in ``folder`` (read one at a time), or (file, error) for a file that failed.

    A file's units are given once all its runs went through: a JSON-lines file with a bad run gives only
    its error, as a bad file of one run. ``tools`` collects the tool names the transcripts use; ``reading``
    is how transcripts are read (``tokenizer``, ``calibration``, ``sidechains``: see :func:`iter_sources`).
    ``measure(data, entries, seed)`` gives what a unit holds (by entry), its warnings and the rest of its
    :class:`Unit` as keywords: by default each entry's run summary (:func:`summarize_unit`); another study
    passes its own. A run whose content is another's (a copied file) is one unit: ``seen`` says so, by default
    as a warning (the command line shows it as one line). ``jobs`` processes measure the units
    (:func:`prunesim.studies.pool.ordered`); what is given, and in which order, is the same for any number.
    """
    seen = Seen(lambda line: warn(line, stacklevel=2)) if seen is None else seen
    measure = measure or summarize_unit

    def task(data):  # a unit's measures, or the UserError that fails its file
        try:
            return measure(data, entries, seed)
        except UserError as err:  # the transcript's model or window: this file's error, the others go on
            return err

    held: list[Unit] = []
    current = dead = None
    for path, data, measured in sources_ahead(iter_sources([folder], **reading), task, jobs, seen):
        if path != current:
            yield from held
            held, current = [], path
        if path == dead:
            continue
        if isinstance(data, Exception):
            held, dead = [], path
            yield path, data
            continue
        tools.update(p["tool"] for p in data.parts if p.get("tool"))
        if isinstance(measured, UserError):
            held, dead = [], path
            seen.forget(path)
            yield path, measured
            continue
        summaries, warnings, extra = measured
        held.append(Unit(data.name, summaries, tuple(warnings), **extra))
    yield from held


def summarize_unit(data, entries: list[Entry], seed: int | None) -> tuple[dict, list[str], dict]:
    """Every entry's run summary on one transcript, the import's and replays' warnings, and the rest of its
    :class:`Unit` (the recorded bill, the runtime it was billed on, what cannot move on it, the prices)."""
    summaries, warnings = {}, dict.fromkeys(data.warnings)  # each of its replays' warnings once
    built: dict[int, Scenario] = {}  # each setting's replay scenario, built once per transcript
    billed, extra = {}, {}
    for entry in entries:
        if id(entry.scenario) not in built:
            built[id(entry.scenario)] = replay_scenario(entry.scenario, data)
        result, _ = replay(data, entry.scenario, entry.policy, seed, trace="none", scenario=built[id(entry.scenario)])
        summaries[entry.key] = result.summary
        billed[entry.key] = (result.scenario.pricing.input, result.scenario.pricing.output)
        warnings.update(dict.fromkeys(result.warnings))
        if entry.key == (REFERENCE, ""):
            extra = {"recorded_cost": recorded_bill(data, result.scenario), "runtime": result.settings.runtime(),
                     "unobservable": observable.of_transcript(data, result.scenario)}
        del result
    return summaries, list(warnings), {**extra, "prices": billed}


def synthetic_units(entries: list[Entry], seeds: list[int], jobs: int = 1) -> Iterator[Unit]:
    """One unit per seed: every entry on its scenario's workload for that seed (on ``jobs`` processes)."""
    reference = entries[0].scenario
    runtime, hidden = settings.of(reference).runtime(), observable.of_synthetic(reference)
    billed = {e.key: (e.scenario.pricing.input, e.scenario.pricing.output) for e in entries}

    def unit(seed: int) -> Unit:
        return Unit(f"seed {seed}", {e.key: run_one(e.scenario, e.policy, seed, trace="none").summary
                                     for e in entries}, runtime=runtime, unobservable=hidden, prices=billed)

    yield from ordered(unit, seeds, jobs)


def unit_rows(unit: Unit, entries: list[Entry], transcripts: bool) -> list[dict]:
    """The figures of each entry on one unit."""
    ref = unit.summaries[(REFERENCE, "")]
    ref_input = ref["input_tokens_billed"]
    ref_total = ref_input + ref["output_tokens_billed"]
    ref_cost = ref["cost_usd"]
    bill = unit.recorded_cost
    ref_uncached = uncached_bill(ref, unit.prices.get((REFERENCE, ""))) if unit.prices else None
    hidden = unit.unobservable or {}
    runtime = unit.runtime or {}
    rows = []
    for entry in entries:
        s = unit.summaries[entry.key]
        uncached = uncached_bill(s, unit.prices.get(entry.key)) if unit.prices else None
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
            "uncached_cost_usd": uncached,
            "uncached_cost_ratio": uncached / ref_uncached if uncached is not None and ref_uncached else None,
            "model": runtime.get("model"),
            "price_table": runtime.get("price_table"),
            "not_recorded": ";".join(runtime.get("not_recorded", ())) if runtime else None,
            **{f.name: _number(s.get(f.name)) for f in OUTCOME_FIGURES},
        })
        for figure in hidden:  # cannot move on this input: no value, never a 0
            rows[-1][figure] = None
    return rows


def _number(value):
    """A figure's value for the table (a yes/no as 0 or 1); None where the run does not report it."""
    return int(value) if isinstance(value, bool) else value


def outcome_names(rows: list[dict]) -> tuple[str, ...]:
    """The outcome figures some row reports (an agent model ran on its unit)."""
    return tuple(f.name for f in OUTCOME_FIGURES if any(r.get(f.name) is not None for r in rows))


def uncached_bill(summary: dict, prices: tuple[float, float] | None) -> float | None:
    """The run's calls billed as if nothing were cached: every prompt token at the input price."""
    if prices is None:
        return None
    return round((summary["input_tokens_billed"] * prices[0] + summary["output_tokens_billed"] * prices[1]) / 1e6, 9)


def cache_assumption(table: list[dict], entries: list[Entry]) -> dict:
    """Where the prompt cache decides the answer: the entries whose median cost ratio is below 1 with the cache
    and at or above 1 without it (or the reverse), and whether the order of the entries by median cost ratio
    changes when nothing is cached."""
    median = {(r["policy"], r["setting"], r["figure"]): r["median"] for r in table}
    cached = {e.key: median.get((*e.key, "cost_ratio")) for e in entries}
    uncached = {e.key: median.get((*e.key, "uncached_cost_ratio")) for e in entries}
    known = [e.key for e in entries if cached[e.key] is not None and uncached[e.key] is not None]
    flips = [k for k in known if (cached[k] < 1) != (uncached[k] < 1)]
    # A pair ranked one way with the cache and the other way without it (ties on either side reverse nothing).
    reversed_pairs = [[_label(a), _label(b)] for i, a in enumerate(known) for b in known[i + 1:]
                      if (cached[a] - cached[b]) * (uncached[a] - uncached[b]) < 0]

    def order(values):
        return [_label(k) for k in sorted(known, key=lambda k: (values[k], k))]

    return {"cached_order": order(cached), "uncached_order": order(uncached),
            "ranking_depends_on_cache": bool(reversed_pairs), "reversed_pairs": reversed_pairs,
            "sign_depends_on_cache": [_label(k) for k in flips],
            "medians": {_label(k): {"cached": cached[k], "uncached": uncached[k]} for k in known}}


def _label(key: tuple[str, str]) -> str:
    return key[0] + (f" @ {key[1]}" if key[1] else "")


def runtimes(units: list[Unit]) -> dict:
    """What the units were billed on: per model, the units, price tables, windows and what was not recorded."""
    out: dict[str, dict] = {}
    for unit in units:
        r = unit.runtime or {}
        m = out.setdefault(r.get("model", "?"), {"units": 0, "price_tables": [], "windows": [], "triggers": [],
                                                 "not_recorded": {}})
        m["units"] += 1
        for key, plural in (("price_table", "price_tables"), ("window", "windows"), ("trigger", "triggers")):
            if r.get(key) not in m[plural]:
                m[plural].append(r.get(key))
        for key in r.get("not_recorded", ()):
            m["not_recorded"][key] = m["not_recorded"].get(key, 0) + 1
    return out


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


def paired(rows: list[dict], entries: list[Entry]) -> list[dict]:
    """Each entry's dollars against noop's (documented setting) on the same units: the totals, the difference of
    the totals with its paired bootstrap 95% interval, wins, losses and ties where the entry acted
    (:func:`prunesim.studies.aggregate.paired_comparison`). The decision's figure: a median ratio of 1.000
    hides a policy that loses wherever it acts; a sum with an interval does not."""
    noop = {r["unit"]: r["cost_usd"] for r in rows if (r["policy"], r["setting"]) == (REFERENCE, "")}
    out = []
    for entry in entries:
        if entry.key == (REFERENCE, ""):
            continue
        mine = [r for r in rows if (r["policy"], r["setting"]) == entry.key and r["unit"] in noop]
        if not mine:
            continue
        a = [r["cost_usd"] for r in mine]
        b = [noop[r["unit"]] for r in mine]
        out.append({"policy": entry.policy, "setting": entry.setting, **aggregate.paired_comparison(
            a, b, [bool(r["acted"]) for r in mine], b, (entry.policy, entry.setting, "against", REFERENCE))})
    return out


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
