"""Small hand-made windows and workloads for the runtime policies' tests."""

from __future__ import annotations

import numpy as np
from prunesim.io import scenario_files as sc
from prunesim.io.transcripts.workload import WorkloadData, repeats_of
from prunesim.model.spans import Span
from prunesim.policies import get_policy
from prunesim.policies.base import WindowView


def view_of(spans, turn, size=100_000, utilization=None, budget=None):
    used = sum(s.tokens for s in spans) if utilization is None else utilization
    return WindowView(turn=turn, utilization=used, budget=budget or size, size=size, hard=False, spans=spans)


def tool_turns(sizes, tools=None, first_id=1, call_tokens=20):
    """One tool call and its output per turn (turn 1, 2, ...): output i holds ``sizes[i]`` tokens."""
    spans = []
    sid = first_id
    for i, size in enumerate(sizes):
        tool = tools[i] if tools else "bash"
        spans.append(Span(sid, "tool_call", call_tokens, i + 1, key=f"cmd{i}", tool=tool))
        spans.append(Span(sid + 1, "tool_output", size, i + 1, key=f"cmd{i}", tool=tool))
        sid += 2
    return spans


def policy(name, overrides=None, base="transcript", seed=0):
    scenario = sc.load(base, overrides or {})
    return get_policy(name)(scenario, np.random.default_rng(seed))


def workload(turns, output=lambda t: 1000, tools=None, keys=None, reasoning=50, call=20, system=300, extra=None):
    """A workload in memory: a pinned system prompt, then per turn a reasoning, a call and its output.

    ``keys(t)`` names the command of turn t (default: a new one each turn), ``tools(t)`` its tool,
    ``extra(t)`` more parts for turn t.
    """
    parts = [{"type": "part", "turn": 0, "kind": "system", "tokens": system}]
    for t in range(1, turns + 1):
        key = keys(t) if keys else f"cmd {t}"
        tool = tools(t) if tools else "bash"
        parts.append({"type": "part", "turn": t, "kind": "reasoning", "tokens": reasoning})
        parts.append({"type": "part", "turn": t, "kind": "tool_call", "tokens": call, "key": key, "tool": tool})
        parts.append({"type": "part", "turn": t, "kind": "tool_output", "tokens": output(t), "key": key,
                      "tool": tool})
        parts.extend(extra(t) if extra else ())
    header = {"type": "header", "prunesim_workload": 1, "name": "hand-made", "source": "test", "format": "test",
              "tokenizer": "pieces", "model": "", "turns": turns, "parts": len(parts), "repeats": repeats_of(parts),
              "prompt_tokens": None}
    return WorkloadData(header, parts)
