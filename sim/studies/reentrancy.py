"""Seed 004: the 60-turn self-edit reentrancy story, told turn by turn.

Under each policy variant, the life of one content key (the kubectl describe
output): when it and its justification leave the window, whether the command
runs again, and what the tombstone and the edit log say; over many seeds, how
often the published pattern (a re-run within three turns of the editor pruning
its own justification) shows up, and whether provenance held.

The seed's claim, that provenance stops the agent from repeating work, is also
made a prediction: the same variants and seeds run again under an agent model
(:mod:`prunesim.model.agent`, a profile's needs, re-fetches, redos, turn cap
and success), and the report gives each variant's mean model calls of the
agent and expected share of tasks solved, and the difference of each variant
with records from the one without (``naive``), paired over seeds with a
bootstrap 95% interval, all from what the runs did.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from prunesim.io.scenario_files import load, replace
from prunesim.model.scenario import Scenario
from prunesim.policies import REGISTRY
from prunesim.runner import run_one
from prunesim.studies.aggregate import paired_difference
from prunesim.studies.variant import Variant

ARTIFACTS = ("prune_index", "prune_rationale", "tombstone")
PREDICTED = ("agent_calls", "redos", "refetches", "task_success")  # per run, under the agent model
NO_RECORDS = "naive"  # the variant whose editor leaves no record (its own justification pruned with the span)
PATTERN_TURNS = 3  # "re-run within 3 turns of pruning its own justification"


@dataclass
class KeyStory:
    """The life of one content key in one run, read from the run's trace, events and edit log."""

    key: str
    lines: list[tuple[int, str]] = field(default_factory=list)  # (turn, what happened), in order
    prune_turn: int = -1  # first turn the key's output was evicted
    justification_turn: int = -1  # turn the rationale naming that eviction left the window (-1: it never did)
    justification_tokens: int = 0
    reruns: list[dict] = field(default_factory=list)  # {turn, kind, turns_since_prune, tokens}
    pattern: bool = False  # re-run within PATTERN_TURNS turns of its justification's prune

    def as_dict(self) -> dict:
        return {
            "key": self.key,
            "prune_turn": self.prune_turn,
            "justification_turn": self.justification_turn,
            "justification_tokens": self.justification_tokens,
            "reruns": self.reruns,
            "pattern": self.pattern,
            "story": [{"turn": t, "what": w} for t, w in self.lines],
        }


def _events(result, name: str) -> list[tuple[int, dict]]:


    return [(e.turn, e.detail) for e in result.events if e.event == name]


def key_story(result, key: str) -> KeyStory:
    """Tell what happened to ``key`` (needs a run recorded with ``trace="all"``)."""
    t = result.recorder.trace
    rows = list(zip(t["seq"], t["turn"], t["event"], t["kind"], t["span_id"], t["key"], t["delta"], strict=True))
    story = KeyStory(key)
    plans = {}  # evicted span id -> prune_plan detail
    for turn, d in _events(result, "prune_plan"):
        for sid in d["selected"]:
            plans[sid] = dict(d, turn=turn)
    left = {int(r[4]): int(r[1]) for r in rows if r[2] != "append"}  # span id -> turn it left
    log = {r.body.get("span_id"): r for r in result.edit_log if r.kind == "evict"}
    out: list[tuple[int, int, str]] = []  # (turn, order, text)
    for seq, turn, event, kind, sid, k, delta in rows:
        if k != key or kind == "tool_call":
            continue
        turn, sid = int(turn), int(sid)
        if event == "append" and kind == "tool_output":
            out.append((turn, seq, f"{key!r} output enters the window ({delta} tokens, span {sid})"))
        elif event == "append" and kind == "tombstone":
            info = result.tombstones.get(sid)
            if info is not None and info.kind != "tool_output":
                continue  # the tool call's own tombstone: the output's tells the story
            said = (f": {info.tokens}-token {info.kind} {info.evicted_id}, hash {info.content_hash[:12]}, "
                    f"turn {info.turn}, reason '{info.reason}', log record #{info.record_seq}") if info else ""
            out.append((turn, seq, f"a {delta}-token tombstone (span {sid}) stays in the window{said}"))
        elif kind == "tool_output":
            plan = plans.get(sid)
            if story.prune_turn < 0 and event == "evict":
                story.prune_turn = turn
            text = f"{key!r} output (span {sid}, {-delta} tokens) leaves the window: {event}"
            if plan is not None:
                text += f" by pass {plan['pass_id']}"
                rid = plan["rationale_span"]
                if rid < 0:
                    text += "; its plan and rationale are in the edit log, outside the window"
                else:
                    gone = left.get(rid, -1)
                    if story.justification_turn < 0 and event == "evict":
                        story.justification_turn = gone
                        story.justification_tokens = plan["rationale"]
                    if plan["own_rationale"]:
                        text += f"; in the same pass it evicts its own {plan['rationale']}-token justification"
                    elif gone >= 0:
                        text += f"; its {plan['rationale']}-token justification is pruned at turn {gone}"
                    else:
                        text += f"; its {plan['rationale']}-token justification stays in the window"
            record = log.get(sid)
            if record is not None:
                text += (f"; edit log #{record.seq}: '{record.body['reason']}', "
                         f"hash {record.body['content_hash'][:12]}, chained to {record.prev[:12]}")
            out.append((turn, seq, text))
    order = len(rows) + 1
    for name, what in (("re_retrieval", "no record of it remains in the window: the agent runs the command again"),
                       ("override_retrieval", "the record says stale, but the content is truly needed: explicit "
                                              "override, the agent runs the command again"),
                       ("need_dismissed", "the agent reaches for it; the record in the window says it was pruned "
                                          "as stale: no re-run")):
        for turn, d in _events(result, name):
            if d.get("key") != key:
                continue
            since = d.get("turns_since_prune", 0)
            text = f"{what} ({since} turn{'s' if since != 1 else ''} after the prune)"
            if name != "need_dismissed":
                story.reruns.append({"turn": turn, "kind": name, "turns_since_prune": since,
                                     "tokens": d.get("tokens", 0)})
            # needs are met during the turn, before that turn's prune pass
            out.append((turn, -1, text))
            order += 1
    out.sort(key=lambda x: (x[0], x[1]))
    story.lines = [(turn, text) for turn, _, text in out]
    story.reruns.sort(key=lambda r: r["turn"])
    j = story.justification_turn
    story.pattern = j >= 0 and any(
        r["kind"] == "re_retrieval" and 0 < r["turn"] - j <= PATTERN_TURNS for r in story.reruns
    )
    return story


def provenance_checks(result) -> dict:
    """Per-run checks of the tombstoned guarantees (needs ``trace="all"``)."""
    t = result.recorder.trace
    evicted = {int(sid) for ev, kind, sid in zip(t["event"], t["kind"], t["span_id"], strict=True)
               if ev != "append" and kind not in ARTIFACTS}
    tombstoned_keys: set[str] = set()
    first_tomb: dict[str, int] = {}
    for seq, ev, kind, k in zip(t["seq"], t["event"], t["kind"], t["key"], strict=True):
        if ev == "append" and kind == "tombstone":
            first_tomb.setdefault(k, int(seq))
            tombstoned_keys.add(k)
    tomb_turn = {}
    for turn, ev, kind, k in zip(t["turn"], t["event"], t["kind"], t["key"], strict=True):
        if ev == "append" and kind == "tombstone":
            tomb_turn.setdefault(k, int(turn))
    rr_tombstoned = sum(1 for turn, d in _events(result, "re_retrieval") if tomb_turn.get(d["key"], 1 << 30) < turn)
    logged = {r.body.get("span_id") for r in result.edit_log if r.kind == "evict"}
    s = result.summary
    return {
        "evictions": len(evicted),
        "logged_evictions": len(evicted & logged),
        "log_records_every_eviction": bool(result.edit_log) and evicted <= logged,
        "re_retrievals_of_tombstoned_keys": rr_tombstoned,
        "re_retrievals": s["re_retrievals"],
        "override_retrievals": s["override_retrievals"],
        "lost_constraints": s["lost_constraints"],
        "unrecorded_evictions": s["unrecorded_evictions"],
        "edit_log_verified": bool(s["edit_log_verified"]),
        "self_edit_refusals": s["self_edit_refusals"],
        "readmit_cycles": s["readmit_cycles"],
        "history_gap": s["history_gap"],
    }


@dataclass
class ReentrancyReport:
    name: str
    scenario: str
    key: str
    story_seed: int
    seeds: list[int]
    stories: dict[str, KeyStory]  # variant -> story of the story seed
    runs: dict[str, list[dict]]  # variant -> per seed: pattern facts and provenance checks
    agent: str = ""  # the agent profile of the prediction ('' for none)
    predicted: dict[str, list[dict]] = field(default_factory=dict)  # variant -> per seed: PREDICTED figures

    def prediction(self) -> dict:
        """Per variant the mean of each predicted figure over seeds, and for each variant with records its paired
        difference from the one without (mean over seeds, bootstrap 95% interval); {} with no agent model."""
        if not self.predicted:
            return {}
        out: dict = {"agent_profile": self.agent, "variants": {}, "against": NO_RECORDS, "differences": {}}
        for label, rows in self.predicted.items():
            out["variants"][label] = {f: float(np.mean([r[f] for r in rows])) for f in PREDICTED if f in rows[0]}
        reference = self.predicted.get(NO_RECORDS)
        for label, rows in self.predicted.items():
            if reference is None or label == NO_RECORDS:
                continue
            out["differences"][label] = {
                f: paired_difference([r[f] for r in reference], [r[f] for r in rows], ("reentrancy", label, f))
                for f in ("agent_calls", "task_success") if f in rows[0]}
        return out

    def aggregate(self, label: str) -> dict:
        rows = self.runs[label]
        n = len(rows)
        pattern = sum(r["pattern"] for r in rows)
        gaps = [r["turns_since_prune"] for r in rows if r["turns_since_prune"] is not None]
        return {
            "runs": n,
            "pattern_runs": pattern,
            "pattern_share": round(pattern / n, 4) if n else 0.0,
            "key_pruned_runs": sum(r["prune_turn"] >= 0 for r in rows),
            "key_rerun_runs": sum(r["key_reruns"] > 0 for r in rows),
            "key_override_runs": sum(r["key_overrides"] > 0 for r in rows),
            "median_turns_to_rerun": float(np.median(gaps)) if gaps else None,
            "re_retrievals_total": sum(r["re_retrievals"] for r in rows),
            "re_retrievals_of_tombstoned_keys": sum(r["re_retrievals_of_tombstoned_keys"] for r in rows),
            "override_retrievals_total": sum(r["override_retrievals"] for r in rows),
            "readmit_cycles_total": sum(r["readmit_cycles"] for r in rows),
            "lost_constraints_total": sum(r["lost_constraints"] for r in rows),
            "unrecorded_evictions_total": sum(r["unrecorded_evictions"] for r in rows),
            "edit_log_verified_runs": sum(r["edit_log_verified"] for r in rows),
            "log_records_every_eviction_runs": sum(r["log_records_every_eviction"] for r in rows),
            "self_edit_refusals_total": sum(r["self_edit_refusals"] for r in rows),
            "median_history_gap": float(np.median([r["history_gap"] for r in rows])) if rows else 0.0,
        }

    def as_dict(self) -> dict:
        extra = {"prediction": self.prediction()} if self.predicted else {}
        return {
            **extra,
            "replay": self.name,
            "scenario": self.scenario,
            "key": self.key,
            "story_seed": self.story_seed,
            "seeds": [self.seeds[0], self.seeds[-1] + 1] if self.seeds else [],
            "n_seeds": len(self.seeds),
            "variants": {
                label: {"story": self.stories[label].as_dict(), "over_seeds": self.aggregate(label)}
                for label in self.runs
            },
        }


def format_reentrancy(report: ReentrancyReport) -> str:
    lines = [f"replay {report.name}: scenario {report.scenario}, the life of {report.key!r}"]
    for label, story in report.stories.items():
        lines.append("")
        lines.append(f"== {label}, seed {report.story_seed}")
        for turn, what in story.lines:
            lines.append(f"  turn {turn:>3}  {what}")
        if not story.reruns:
            lines.append("  (the command never runs again)")
    lines.append("")
    lines.append(f"over {len(report.seeds)} seeds:")
    for label in report.runs:
        a = report.aggregate(label)
        n = a["runs"]
        lines.append(f"== {label}")
        lines.append(f"  re-run within {PATTERN_TURNS} turns of pruning its own justification: "
                     f"{a['pattern_runs']}/{n} runs ({100 * a['pattern_share']:.0f}%)")
        median = a["median_turns_to_rerun"]  # None: no run re-ran the command, so there is no median
        lines.append(f"  key pruned in {a['key_pruned_runs']}/{n}, re-run without a record in "
                     f"{a['key_rerun_runs']}/{n}, overridden in {a['key_override_runs']}/{n}; median turns from "
                     f"prune to re-run: {'- (no run re-ran it)' if median is None else median}")
        lines.append(f"  all keys: re-retrievals {a['re_retrievals_total']} (of tombstoned keys "
                     f"{a['re_retrievals_of_tombstoned_keys']}), explicit overrides {a['override_retrievals_total']}, "
                     f"prune/re-admit cycles {a['readmit_cycles_total']}")
        lines.append(f"  lost constraints {a['lost_constraints_total']}, unrecorded evictions "
                     f"{a['unrecorded_evictions_total']}, self-edit refusals {a['self_edit_refusals_total']}")
        lines.append(f"  edit log verified in {a['edit_log_verified_runs']}/{n} runs, records every eviction in "
                     f"{a['log_records_every_eviction_runs']}/{n}")
        lines.append(f"  history gap (commands run that the window no longer shows, what a rolling summary "
                     f"cannot account for): median {a['median_history_gap']:.0%}")
    lines += format_prediction(report)
    return "\n".join(lines)


def format_prediction(report: ReentrancyReport) -> list[str]:
    """The prediction's lines ([] without an agent model)."""
    p = report.prediction()
    if not p:
        return []
    lines = ["", f"predicted under the agent model (profile {p['agent_profile']}; docs/agent.md), mean over "
             f"{len(report.seeds)} seeds:",
             f"  {'variant':24s} {'agent calls':>11s} {'redos':>7s} {'re-fetches':>10s} {'solved':>7s}"]
    def cell(m: dict, f: str, width: int, digits: int) -> str:
        return f"{m[f]:{width}.{digits}f}" if f in m else f"{'-':>{width}s}"  # '-': the profile cannot move it

    for label, m in p["variants"].items():
        lines.append(f"  {label:24s} {cell(m, 'agent_calls', 11, 2)} {cell(m, 'redos', 7, 2)} "
                     f"{cell(m, 'refetches', 10, 2)} {cell(m, 'task_success', 7, 3)}")
    for label, d in p["differences"].items():
        parts = [f"{name} {d[f]['mean']:+.{k}f} [{d[f]['ci_low']:+.{k}f}, {d[f]['ci_high']:+.{k}f}]"
                 for f, name, k in (("agent_calls", "agent calls", 2), ("task_success", "solved", 4)) if f in d]
        lines.append(f"  {label} - {p['against']} (paired over seeds, bootstrap 95%): {', '.join(parts)}")
    return lines


@dataclass(frozen=True)
class ReentrancyReplay:
    """A replay told as a story: one key's life under each variant, and the pattern's share over seeds."""

    name: str
    scenario: str
    key: str
    variants: tuple[Variant, ...]
    predicts = True  # run(agent=...) predicts the variants' calls and success under an agent model

    @staticmethod
    def format_report(report: ReentrancyReport) -> str:
        return format_reentrancy(report)

    def available(self) -> list[Variant]:
        out = []
        for v in self.variants:
            cls = REGISTRY.get(v.policy)
            needs = getattr(cls, "planner", None)
            if cls is not None and (needs is None or needs in REGISTRY):
                out.append(v)
        return out

    def run(self, seeds: list[int], base: Scenario | None = None, agent: str = "") -> ReentrancyReport:
        """The stories and checks as the seed tells them; with ``agent`` (a profile's name), the prediction too."""
        sc = base or load(self.scenario)
        stories: dict[str, KeyStory] = {}
        runs: dict[str, list[dict]] = {}
        predicted: dict[str, list[dict]] = {}
        for v in self.available():
            variant_sc = replace(sc, v.overrides, policy=v.policy) if v.overrides else sc  # checked as it runs
            stories[v.label] = key_story(run_one(variant_sc, v.policy, sc.seed, trace="all"), self.key)
            rows = []
            for seed in seeds:
                result = run_one(variant_sc, v.policy, seed, trace="all")
                story = key_story(result, self.key)
                first = next((r for r in story.reruns if r["kind"] == "re_retrieval"), None)
                rows.append({
                    "seed": seed,
                    "pattern": story.pattern,
                    "prune_turn": story.prune_turn,
                    "justification_turn": story.justification_turn,
                    "key_reruns": sum(r["kind"] == "re_retrieval" for r in story.reruns),
                    "key_overrides": sum(r["kind"] == "override_retrieval" for r in story.reruns),
                    "turns_since_prune": first["turns_since_prune"] if first else None,
                    **provenance_checks(result),
                })
            runs[v.label] = rows
            if agent:
                predicted[v.label] = [_predicted(run_one(variant_sc, v.policy, seed, trace="none", agent=agent))
                                      for seed in seeds]
        return ReentrancyReport(self.name, sc.name, self.key, sc.seed, list(seeds), stories, runs, agent, predicted)


def _predicted(result) -> dict:
    """A run's predicted figures; a figure its profile cannot move is left out (no success model, no redo)."""
    s = result.summary
    return {f: float(s[f]) for f in PREDICTED if f in s}


REENTRANCY = ReentrancyReplay(
    name="reentrancy",
    scenario="reentrancy-60",
    key="kubectl describe pod api-7f9c",
    variants=(
        Variant("naive", "naive"),
        Variant("tombstoned", "tombstoned"),
        Variant("slack-gated+tombstoned", "slack-gated+tombstoned"),
    ),
)
