"""Every policy on the same units, side by side: the leaderboard.

A *unit* is one imported transcript (each policy replays it) or one seed of a
synthetic scenario (each policy meets the same workload). For every unit and
policy the study takes a few figures from the run's metrics, some of them
relative to ``noop`` on the same unit, and reduces them per policy over the
units: median, mean and the bootstrap 95% interval of the median
(:func:`prunesim.studies.aggregate.describe`, the same statistics as
``prunesim aggregate``).

Files written in the output folder: ``runs.csv`` (one row per unit and policy,
with the unit's turns),
``leaderboard.csv`` (tidy: one row per policy and figure) and ``leaderboard.json``
(what was run).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from prunesim import __version__
from prunesim.errors import UserError
from prunesim.io import atomic
from prunesim.model.scenario import Scenario
from prunesim.runner import run_one
from prunesim.studies.aggregate import describe
from prunesim.studies.transcript_replay import iter_sources, replay, replay_scenario

REFERENCE = "noop"  # every ratio is against this policy on the same unit
RUNS_FILE = "runs.csv"
TABLE_FILE = "leaderboard.csv"
META_FILE = "leaderboard.json"
TABLE_COLUMNS = ("policy", "figure", "n", "median", "mean", "ci_low", "ci_high")


@dataclass(frozen=True)
class Figure:
    name: str
    unit: str
    definition: str


FIGURES = (
    Figure("input_ratio", "ratio", "input_tokens_billed / noop's on the same unit: the prompt tokens billed, "
           "the policy's own calls (prune passes, compactions) included"),
    Figure("total_ratio", "ratio", "(input_tokens_billed + output_tokens_billed) / noop's on the same unit"),
    Figure("cost_ratio", "ratio", "cost_usd / noop's on the same unit: dollars at the scenario's [pricing], the "
           "prompt cache and the policy's own calls included"),
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
# What the policy did, from the metrics: any of these above zero means it changed the window.
ACTIONS = ("passes", "non_model_evictions", "clearings", "compactions", "memory_warnings")
FIGURE_NAMES = tuple(f.name for f in FIGURES)


@dataclass
class Unit:
    """One transcript or seed, and each policy's run summary on it."""

    name: str
    summaries: dict[str, dict]
    warnings: tuple[str, ...] = ()  # the import's warnings about the transcript


def with_reference(policies: list[str]) -> list[str]:
    """The policies to run: ``noop`` first (the reference), then the others in the order given."""
    return [REFERENCE, *(p for p in policies if p != REFERENCE)]


def transcript_units(folder: Path, base: Scenario, policies: list[str], seed: int | None, tools: set[str],
                     **reading) -> Iterator[Unit | tuple[Path, UserError]]:
    """One unit per workload in ``folder`` (read one at a time), or (file, error) for a file that failed.

    ``tools`` collects the tool names the transcripts use; ``reading`` is how transcripts are read
    (``tokenizer``, ``calibration``, ``sidechains``: see :func:`iter_sources`).
    """
    for path, data in iter_sources([folder], **reading):
        if isinstance(data, UserError):
            yield path, data
            continue
        tools.update(p["tool"] for p in data.parts if p.get("tool"))
        summaries = {}
        scenario = replay_scenario(base, data)
        for policy in with_reference(policies):
            result, _ = replay(data, base, policy, seed, scenario=scenario)
            summaries[policy] = result.summary
            del result
        yield Unit(data.name, summaries, tuple(data.warnings))


def synthetic_units(scenario: Scenario, policies: list[str], seeds: list[int]) -> Iterator[Unit]:
    """One unit per seed: every policy on the scenario's workload for that seed."""
    for seed in seeds:
        summaries = {p: run_one(scenario, p, seed, trace="none").summary for p in with_reference(policies)}
        yield Unit(f"seed {seed}", summaries)


def unit_rows(unit: Unit, policies: list[str], transcripts: bool) -> list[dict]:
    """The figures of each policy on one unit."""
    ref = unit.summaries[REFERENCE]
    ref_input = ref["input_tokens_billed"]
    ref_total = ref_input + ref["output_tokens_billed"]
    ref_cost = ref["cost_usd"]
    rows = []
    for policy in policies:
        s = unit.summaries[policy]
        rows.append({
            "unit": unit.name,
            "policy": policy,
            "turns": s["turns"],
            "input_ratio": s["input_tokens_billed"] / ref_input if ref_input else None,
            "total_ratio": (s["input_tokens_billed"] + s["output_tokens_billed"]) / ref_total if ref_total else None,
            "cost_ratio": s["cost_usd"] / ref_cost if ref_cost else None,
            "decision_tokens": s["decision_tokens_billed"],
            "peak_utilization": s["peak_utilization"],
            "re_retrievals": s["repeats_after_prune"] if transcripts else s["re_retrievals"],
            "lost_constraints": s["lost_constraints"],
            "unrecorded_evictions": s["unrecorded_evictions"],
            "forced_truncations": s["forced_truncations"],
            "acted": int(any(s[a] for a in ACTIONS)),
        })
    return rows


def reduce(rows: list[dict], policies: list[str]) -> list[dict]:
    """Per policy and figure: n, median, mean and the bootstrap interval of the median over the units."""
    table = []
    for policy in policies:
        mine = [r for r in rows if r["policy"] == policy]
        for figure in FIGURE_NAMES:
            stats = describe([r[figure] for r in mine], (policy, figure))
            if stats is not None:
                table.append({"policy": policy, "figure": figure, **stats})
    return table


def write(out: Path, meta: dict, rows: list[dict], table: list[dict]) -> list[Path]:
    """The three files, each written atomically (runs first, the table last)."""
    out = Path(out)
    run_columns = ("unit", "policy", "turns", *FIGURE_NAMES)
    atomic.write_csv(out / RUNS_FILE, run_columns, (["" if r[c] is None else r[c] for c in run_columns] for r in rows))
    atomic.write_json(out / META_FILE, {**meta, "prunesim_version": __version__, "reference": REFERENCE,
                                        "figures": {f.name: {"unit": f.unit, "definition": f.definition}
                                                    for f in FIGURES}})
    atomic.write_csv(out / TABLE_FILE, TABLE_COLUMNS, ([r[c] for c in TABLE_COLUMNS] for r in table))
    return [out / RUNS_FILE, out / META_FILE, out / TABLE_FILE]
