"""Self-edit reentrancy: re-retrievals, overrides, records of what was pruned, the edit log.

A *need* is the agent reaching for content it saw before (:mod:`prunesim.model.needs`).
When that content left the window and nothing in the window records it, the
agent runs the tool again: a *re-retrieval*. When a tombstone or a rationale
says it was pruned as stale and the agent truly needs it, the run is an
*explicit override*.
"""

from __future__ import annotations

from prunesim.model.events import Observer, RunEnd

from .definition import Metric, mean

DEFINITIONS = (
    Metric("re_retrievals", "runs", "Tool runs repeated because pruned content was needed and nothing recorded it."),
    Metric("re_retrieved_tokens", "tokens", "Output tokens that re-entered the window through re_retrievals."),
    Metric(
        "re_retrieval_gap_mean",
        "turns",
        "Mean turns from the removal of a key's content to its re-retrieval (0 if none); each re-retrieval is an "
        "events.csv re_retrieval row with {key, tokens, turns_since_prune}.",
    ),
    Metric(
        "override_retrievals",
        "runs",
        "Tool runs repeated although a record in the window (tombstone or rationale) said the content was pruned as "
        "stale: explicit overrides, made only when the content is truly needed.",
    ),
    Metric("dismissed_needs", "needs", "Needs for pruned content that a record in the window showed to be stale."),
    Metric("readmit_cycles", "cycles", "Prune/re-admit cycles: pruned content run again (re-retrievals + overrides)."),
    Metric("readmit_keys", "keys", "Content keys brought back at least once."),
    Metric("readmit_max_per_key", "cycles", "Most prune/re-admit cycles of any one content key."),
    Metric(
        "unrecorded_evictions",
        "spans",
        "Content spans removed from the window with, at the end of the run, nothing in the window recording them: "
        "no tombstone, and no surviving rationale, placeholder or summary naming them (prune artifacts, "
        "tombstones, placeholders, summaries and warnings are records, not content).",
    ),
    Metric("tombstone_tokens", "tokens", "Tokens held by tombstones in the window at the end of the run."),
    Metric(
        "history_gap",
        "fraction",
        "Summary drift: at the end of each turn, the share of the commands run so far of which the window holds no "
        "trace (no output, no tombstone, no rationale naming it), averaged over turns: what a rolling summary "
        "written from the window can no longer account for. Measured when the scenario models needs; else 0.",
    ),
    Metric("self_edit_refusals", "plans", "Plans a policy's guard refused (overlapping its own rationale, a "
           "tombstone, a log record or a constraint); each is an events.csv self_edit_refused row."),
    Metric("edit_log_records", "records", "Records in the external edit log (0 for policies that keep none)."),
    Metric(
        "edit_log_verified",
        "bool",
        "The policy keeps an edit log and its hash chain verifies against the anchor at the end of the run "
        "(false for policies that keep none).",
    ),
)


class ProvenanceMetrics(Observer):
    def __init__(self, run):
        self.re_retrievals = self.re_retrieved_tokens = self.re_retrieval_gaps = 0
        self.override_retrievals = self.dismissed_needs = 0
        self.readmits: dict[str, int] = {}
        self.self_edit_refusals = 0
        self.history_gap_sum = 0.0
        self.history_turns = 0
        self.unrecorded_evictions = self.tombstone_tokens = 0

    def on_need(self, time, turn, outcome, key, tokens, turns_since_prune, record) -> None:
        if outcome == "dismissed":
            self.dismissed_needs += 1
            return
        if outcome == "re_retrieval":
            self.re_retrievals += 1
            self.re_retrieved_tokens += tokens
            self.re_retrieval_gaps += turns_since_prune
        else:
            self.override_retrievals += 1
        self.readmits[key] = self.readmits.get(key, 0) + 1

    def on_history(self, turn, commands_run, commands_traced) -> None:
        if commands_run:
            self.history_gap_sum += 1 - commands_traced / commands_run
            self.history_turns += 1

    def on_self_edit_refused(self, time, turn, reason, span_ids, action) -> None:
        self.self_edit_refusals += 1

    def on_run_end(self, end: RunEnd) -> None:
        self.unrecorded_evictions = end.unrecorded_evictions
        self.tombstone_tokens = end.tombstone_tokens

    def summary(self, so_far: dict) -> dict:
        return {
            "re_retrievals": self.re_retrievals,
            "re_retrieved_tokens": self.re_retrieved_tokens,
            "re_retrieval_gap_mean": mean(self.re_retrieval_gaps, self.re_retrievals),
            "override_retrievals": self.override_retrievals,
            "dismissed_needs": self.dismissed_needs,
            "readmit_cycles": sum(self.readmits.values()),
            "readmit_keys": len(self.readmits),
            "readmit_max_per_key": max(self.readmits.values(), default=0),
            "unrecorded_evictions": self.unrecorded_evictions,
            "tombstone_tokens": self.tombstone_tokens,
            "history_gap": round(self.history_gap_sum / self.history_turns, 6) if self.history_turns else 0.0,
            "self_edit_refusals": self.self_edit_refusals,
        }


class EditLogCheck(Observer):
    """Verifies the external edit log's hash chain against its anchor when the run ends."""

    def __init__(self, run):
        self.records = 0
        self.verified = False

    def on_run_end(self, end: RunEnd) -> None:
        self.records = len(end.edit_log)
        self.verified = end.keeps_edit_log and end.edit_log.verify(end.anchor).ok

    def summary(self, so_far: dict) -> dict:
        return {"edit_log_records": self.records, "edit_log_verified": self.verified}
