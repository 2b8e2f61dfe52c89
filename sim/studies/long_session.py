"""Long sessions: what each policy costs over hours, on the long-session-2000 scenario.

A Codex session compacted 74 times in 5.9 hours, and 70 of those compactions
were followed within two minutes by re-reads. This replay runs a 2,000-turn
session (sizes and repeat rate measured on real transcripts, see the scenario
file) under each policy variant over several seeds and reports, per variant,
the median over seeds of:

* re-retrievals (nothing recorded the pruned content) and overrides (a record
  said stale, the agent truly needed it) per 100 turns;
* how soon they come after the content was pruned, in turns and simulated
  seconds, and the share of prune events (model-driven passes and non-model
  evictions) followed within ``REREAD_WINDOW_S`` simulated seconds by a re-read
  of content pruned then or earlier;
* tokens held by tombstones and by the tombstone digest every ``SAMPLE_EVERY``
  turns;
* lost constraints, forced truncation, and the input tokens billed.

The figures come from one extra observer per run (:class:`LongSessionObserver`),
which keeps bounded state like every other.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

import numpy as np
from prunesim.io.scenario_files import load, replace
from prunesim.model.events import Observer
from prunesim.policies import REGISTRY
from prunesim.runner import run_one
from prunesim.studies.variant import Variant

REREAD_WINDOW_S = 120.0  # "within 2 minutes"
SAMPLE_EVERY = 250  # turns between samples of tombstone and digest tokens


class LongSessionObserver(Observer):
    """Prune times, re-read delays and provenance tokens over one run."""

    def __init__(self, horizon: int, turns: int):
        self.horizon = horizon
        self.turns = turns
        self.removed_at: dict[str, float] = {}  # content key -> time its output last left the window
        self.prune_times: list[float] = []  # one per prune event (a pass or a non-model eviction)
        self.reread_times: list[float] = []
        self.reread_turns: list[int] = []  # turns since the prune, per re-read
        self.reread_seconds: list[float] = []
        self.re_retrievals = self.overrides = 0
        self.tombstone_tokens = self.digest_tokens = 0
        self.samples: list[tuple[int, int, int, int]] = []  # (turn, tombstone tokens, digest tokens, utilization)
        self._last_turn_removed: dict[str, int] = {}

    def on_span_appended(self, time, turn, span, kept, utilization, appended_total, removed_total) -> None:
        if span.kind == "tombstone":
            self.tombstone_tokens += kept
        elif span.kind == "tombstone_digest":
            self.digest_tokens += kept

    def on_span_removed(self, time, turn, cause, span, freed, utilization, appended_total, removed_total) -> None:
        kind = span.kind
        if kind == "tombstone":
            self.tombstone_tokens -= freed
        elif kind == "tombstone_digest":
            self.digest_tokens -= freed
        elif kind == "tool_output" and span.key and freed == span.tokens:  # the whole output left
            self.removed_at[span.key] = time
            self._last_turn_removed[span.key] = turn

    def on_prune_pass(self, time, record) -> None:
        self.prune_times.append(time)

    def on_non_model_eviction(self, time, turn, action, reason, spans, freed, fallback) -> None:
        self.prune_times.append(time)

    def on_need(self, time, turn, outcome, key, tokens, turns_since_prune, record) -> None:
        if outcome == "dismissed":
            return
        if outcome == "re_retrieval":
            self.re_retrievals += 1
        else:
            self.overrides += 1
        self.reread_times.append(time)
        self.reread_turns.append(turns_since_prune)
        if key in self.removed_at:
            self.reread_seconds.append(time - self.removed_at[key])

    def on_turn_end(self, time, turn, utilization, appended_total, removed_total) -> None:
        if turn % SAMPLE_EVERY == 0 or turn == self.turns:
            self.samples.append((turn, self.tombstone_tokens, self.digest_tokens, utilization))
            # keys removed longer ago than the horizon can no longer be needed: forget them
            cutoff = turn - self.horizon
            for key in [k for k, t in self._last_turn_removed.items() if t < cutoff]:
                del self._last_turn_removed[key]
                self.removed_at.pop(key, None)

    def followed_share(self) -> float:
        """Share of prune events followed within REREAD_WINDOW_S by a re-read (nan with no prune)."""
        if not self.prune_times:
            return float("nan")
        reads = sorted(self.reread_times)
        hit = 0
        for t in self.prune_times:
            i = bisect_right(reads, t)
            hit += i < len(reads) and reads[i] - t <= REREAD_WINDOW_S
        return hit / len(self.prune_times)

    def figures(self, summary: dict) -> dict:
        per100 = 100.0 / max(1, summary["turns"])
        out = {
            "re_retrievals_per_100_turns": self.re_retrievals * per100,
            "overrides_per_100_turns": self.overrides * per100,
            "prune_events": len(self.prune_times),
            "prunes_followed_by_reread_2min": self.followed_share(),
            "reread_turns_median": float(np.median(self.reread_turns)) if self.reread_turns else float("nan"),
            "reread_seconds_median": float(np.median(self.reread_seconds)) if self.reread_seconds else float("nan"),
            "lost_constraints": summary["lost_constraints"],
            "truncated_tokens": summary["truncated_tokens"],
            "input_tokens_billed": summary["input_tokens_billed"],
            "decision_tokens_billed": summary["decision_tokens_billed"],
            "tombstone_folds": summary["tombstone_folds"],
        }
        for turn, tomb, digest, util in self.samples:
            out[f"tombstone_tokens@{turn}"] = tomb
            out[f"digest_tokens@{turn}"] = digest
            out[f"utilization@{turn}"] = util
        if "cost_usd" in summary:  # the cost model, where it exists
            out["cost_usd"] = summary["cost_usd"]
        return out


@dataclass
class LongSessionReport:
    name: str
    scenario: str
    seeds: list[int]
    variants: dict[str, dict[str, float]]  # variant label -> figure -> median over seeds
    runs: dict[str, list[dict]] = field(default_factory=dict)  # variant label -> per-seed figures

    def as_dict(self) -> dict:
        return {
            "replay": self.name,
            "scenario": self.scenario,
            "seeds": [self.seeds[0], self.seeds[-1] + 1] if self.seeds else [],
            "n_seeds": len(self.seeds),
            "reread_window_s": REREAD_WINDOW_S,
            "variants": self.variants,
        }


def _median(values: list[float]) -> float:
    finite = [v for v in values if v == v]
    return float(np.median(finite)) if finite else float("nan")


@dataclass(frozen=True)
class LongSessionReplay:
    name: str
    scenario: str
    variants: tuple[Variant, ...]
    default_seeds: range = range(0, 5)

    def run(self, seeds: list[int], base=None) -> LongSessionReport:
        sc = base or load(self.scenario)
        runs: dict[str, list[dict]] = {}
        for v in self.variants:
            if v.policy not in REGISTRY:
                continue
            variant_sc = replace(sc, v.overrides, policy=v.policy) if v.overrides else sc  # checked as it runs
            per_seed = []
            for seed in seeds:
                obs = LongSessionObserver(variant_sc.need.horizon, variant_sc.turns)
                result = run_one(variant_sc, v.policy, seed, trace="none", observers=(obs,))
                per_seed.append(obs.figures(result.summary))
            runs[v.label] = per_seed
        medians = {
            label: {k: _median([r[k] for r in rows if k in r]) for k in rows[0]} for label, rows in runs.items()
        }
        return LongSessionReport(self.name, sc.name, list(seeds), medians, runs)

    def format_report(self, report: LongSessionReport) -> str:
        first = next(iter(report.variants.values()), {})
        sample_turns = sorted({int(k.split("@")[1]) for k in first if k.startswith("tombstone_tokens@")})
        lines = [
            f"replay {report.name}: scenario {report.scenario}, {len(report.seeds)} seeds (medians over seeds)",
            f"{'variant':24s} {'re-ret/100t':>11s} {'overr/100t':>10s} {'prunes':>6s} {'reread<2min':>11s} "
            f"{'gap turns':>9s} {'gap s':>7s} {'lost constr':>11s} {'truncated':>10s} {'billed Mtok':>11s}"
            + ("  cost $" if "cost_usd" in first else ""),
        ]
        for label, f in report.variants.items():
            lines.append(
                f"{label:24s} {f['re_retrievals_per_100_turns']:11.2f} {f['overrides_per_100_turns']:10.2f} "
                f"{f['prune_events']:6.0f} {_pct(f['prunes_followed_by_reread_2min']):>11s} "
                f"{_num(f['reread_turns_median']):>9s} {_num(f['reread_seconds_median']):>7s} "
                f"{f['lost_constraints']:11.0f} {f['truncated_tokens']:10.0f} {f['input_tokens_billed'] / 1e6:11.1f}"
                + (f"  {f['cost_usd']:.2f}" if "cost_usd" in f else "")
            )
        lines.append("")
        lines.append("tombstone + digest tokens in the window at turn " + ", ".join(map(str, sample_turns)))
        for label, f in report.variants.items():
            cells = [f"{f[f'tombstone_tokens@{t}']:.0f}+{f[f'digest_tokens@{t}']:.0f}" for t in sample_turns]
            lines.append(f"{label:24s} " + "  ".join(f"{c:>12s}" for c in cells)
                         + f"   folds {f['tombstone_folds']:.0f}")
        return "\n".join(lines)


def _num(x: float) -> str:
    return "-" if x != x else f"{x:.1f}"


def _pct(x: float) -> str:
    return "-" if x != x else f"{100 * x:.0f}%"


LONG_SESSION = LongSessionReplay(
    name="long-session",
    scenario="long-session-2000",
    variants=(
        Variant("noop", "noop"),
        Variant("recency", "recency"),
        Variant("naive", "naive"),
        Variant("slack-gated", "slack-gated"),
        Variant("tombstoned (no budget)", "tombstoned", {"tombstone.budget": 0}),
        Variant("tombstoned", "tombstoned"),
        Variant("tombstoned, digest<=2k", "tombstoned", {"tombstone.digest_max": 2000}),
        Variant("slack-gated+tombstoned", "slack-gated+tombstoned"),
    ),
)
