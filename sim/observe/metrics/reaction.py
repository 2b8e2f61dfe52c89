"""The closed loop of a transcript replay: content the agent fetched again because a policy removed it.

A replayed transcript's agent re-fetches a resource when a recorded call uses
it and the policy under test removed its latest content while the recording
still held it (:mod:`prunesim.model.reaction`). Each re-fetch is an events.csv
``refetch`` row; its model call is billed like any other, and its cost is
``refetch_cost_usd`` (:mod:`.cost`).
"""

from __future__ import annotations

from prunesim.model.events import Observer

from .definition import Metric

DEFINITIONS = (
    Metric("refetches", "calls",
           "Tool calls a replayed transcript's agent made again because the policy had removed the content a "
           "recorded call then used (closed loop, [reaction] mode = \"closed\"); each is an events.csv refetch row "
           "with {resource, key, call_tokens, tokens, latency_s}. 0 for synthetic workloads and with --reaction "
           "none."),
    Metric("refetch_tokens", "tokens",
           "Tokens the refetches put back in the window: each re-run tool call and its output at its recorded size."),
    Metric("refetch_time_s", "s",
           "Simulated time the refetches took: their model calls and tool runs (part of sim_time_s)."),
)


class ReactionMetrics(Observer):
    def __init__(self, run):
        self.refetches = 0
        self.tokens = 0
        self.latency = 0.0

    def on_refetch(self, time, turn, resource, key, call_tokens, tokens, latency_s) -> None:
        self.refetches += 1
        self.tokens += call_tokens + tokens
        self.latency += latency_s

    def summary(self, so_far: dict) -> dict:
        return {"refetches": self.refetches, "refetch_tokens": self.tokens,
                "refetch_time_s": round(self.latency, 6)}
