"""Replays of imported transcripts: repeated tool calls, and which of them pruning caused.

Computed by :mod:`prunesim.studies.transcript_replay` from the recorded trace;
absent from synthetic runs.
"""

from __future__ import annotations

from .definition import Metric

DEFINITIONS = (
    Metric("repeats", "calls", "Tool calls whose content key was already called earlier in the transcript."),
    Metric(
        "repeats_after_prune",
        "calls",
        "Repeats made when the key's latest earlier output (its content; the latest call for a key with no output) "
        "had left the window, removed by the policy or by the replayed runtime's own recorded compaction: "
        "re-retrievals caused by pruning. A surviving call without its output does not count as holding the "
        "content.",
    ),
    Metric("repeats_in_window", "calls", "Repeats made while the key's latest earlier output was still in the window."),
    Metric(
        "repeat_gap_mean",
        "turns",
        "Mean turns from the removal of that output to the repeat, over repeats_after_prune (0 if none).",
    ),
    Metric("repeat_gap_max", "turns", "Largest such gap (0 if none)."),
)
