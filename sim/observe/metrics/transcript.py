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
        "Repeats made when every earlier span holding the key had been removed by the policy, or by the replayed "
        "runtime's own recorded compaction (re-retrieval caused by pruning).",
    ),
    Metric("repeats_in_window", "calls", "Repeats made while an earlier span holding the key was still in the window."),
    Metric(
        "repeat_gap_mean",
        "turns",
        "Mean turns from the latest removal of a key's content to its repeat, over repeats_after_prune (0 if none).",
    ),
    Metric("repeat_gap_max", "turns", "Largest such gap (0 if none)."),
)
