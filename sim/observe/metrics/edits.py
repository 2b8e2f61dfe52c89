"""Runtime context edits: placeholders, model-written summaries and memory-pressure warnings.

The mechanisms agent runtimes ship (tool-result clearing, observation masking,
auto-compaction, memory pressure) edit the window in three ways: a *clearing*
replaces spans by placeholders where they stood; a *compaction* is a model call
that reads the window and writes a summary replacing many spans; a *warning* is a
runtime message appended to the window. A summary *carries* the content of a
replaced span (it can be recalled) or *drops* it (it cannot); the content an
earlier summary carried is judged again by the next one (a summary of a summary).
"""

from __future__ import annotations

from prunesim.model.events import EditRecord, Observer, RunEnd

from .definition import Metric

DEFINITIONS = (
    Metric("clearings", "actions", "Clearings: spans replaced by placeholders where they stood (tool-result clearing, "
           "observation masking)."),
    Metric("cleared_spans", "spans", "Spans replaced by placeholders."),
    Metric("cleared_tokens", "tokens", "Tokens freed by clearings, net of the placeholders left."),
    Metric("placeholder_tokens", "tokens", "Tokens held by placeholders in the window at the end of the run."),
    Metric("compactions", "calls", "Compactions: model calls that read the window and wrote a summary replacing "
           "spans (their tokens count in decision_tokens_billed)."),
    Metric("compacted_tokens", "tokens", "Tokens replaced by compactions, net of the summaries written."),
    Metric("summary_tokens", "tokens", "Tokens of the summaries compactions wrote."),
    Metric("summary_kept_spans", "spans", "Content spans a compaction's summary carried (recallable)."),
    Metric("summary_dropped_spans", "spans", "Content spans a compaction's summary dropped, those an earlier summary "
           "carried included: lost, not recallable."),
    Metric("memory_warnings", "messages", "Memory-pressure warnings the runtime put in the window."),
)


class EditMetrics(Observer):
    def __init__(self, run):
        self.clearings = self.cleared_spans = self.cleared_tokens = 0
        self.compactions = self.compacted_tokens = self.summary_tokens = 0
        self.kept = self.dropped = 0
        self.warnings = 0
        self.placeholder_tokens = 0

    def on_context_edit(self, time: float, turn: int, record: EditRecord) -> None:
        if record.action == "clear":
            self.clearings += 1
            self.cleared_spans += record.spans
            self.cleared_tokens += record.freed - record.written
        elif record.action == "compact":
            self.compactions += 1
            self.compacted_tokens += record.freed - record.written
            self.summary_tokens += record.written
            self.kept += record.kept
            self.dropped += record.dropped
        elif record.action == "restore":
            pass  # a clearing undone: counted by the events file, not here
        else:
            self.warnings += 1

    def on_run_end(self, end: RunEnd) -> None:
        self.placeholder_tokens = end.placeholder_tokens

    def summary(self, so_far: dict) -> dict:
        return {
            "clearings": self.clearings,
            "cleared_spans": self.cleared_spans,
            "cleared_tokens": self.cleared_tokens,
            "placeholder_tokens": self.placeholder_tokens,
            "compactions": self.compactions,
            "compacted_tokens": self.compacted_tokens,
            "summary_tokens": self.summary_tokens,
            "summary_kept_spans": self.kept,
            "summary_dropped_spans": self.dropped,
            "memory_warnings": self.warnings,
        }
