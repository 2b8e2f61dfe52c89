"""Fidelity: does a replay's window match what the real API counted?

For every transcript that records the API's prompt tokens per model call, the
no-op replay's utilization before each model call (our count: initial spans
plus every earlier part, nothing pruned, nothing cut) is compared with the
API's count after one scale factor per model, fitted across the folder by
least squares on the relative error: ``a = sum(x/p) / sum((x/p)^2)`` for our
counts ``x`` and the API's ``p``. A transcript's error is the mean absolute
percentage error ``mean(|a*x - p| / p)`` over its calls; a folder reports the
median and the 90th percentile (linear interpolation) of those errors.

Models are grouped by name without a provider prefix (:func:`model_name`):
``google/gemini-3-pro-preview`` and ``gemini-3-pro-preview`` are one model,
whose tokenizer does not change with the route its calls took.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from prunesim.io.scenario_files import replace
from prunesim.io.transcripts.workload import WorkloadData
from prunesim.model.scenario import Scenario
from prunesim.studies.transcript_replay import replay

HUGE = 10**11  # a window no transcript fills: the no-op replay keeps every token


@dataclass
class Calls:
    name: str
    model: str
    ours: list[int]
    api: list[int]


def model_name(model: str) -> str:
    """The model without its provider or route prefix: the last ``/``-separated part, lower-cased.

    >>> model_name("google/gemini-3-pro-preview"), model_name("openrouter/google/Gemini-3-Pro-Preview")
    ('gemini-3-pro-preview', 'gemini-3-pro-preview')
    """
    return model.strip().rsplit("/", 1)[-1].strip().lower()


def calls_of(data: WorkloadData, base: Scenario) -> Calls | None:
    """(our utilization, API prompt tokens) before each model call with a recorded count; None without any."""
    prompt = data.header.get("prompt_tokens") or []
    if not any(isinstance(p, int) and p > 0 for p in prompt):
        return None
    scenario = replace(base, {"window": HUGE, "budget": HUGE, "trigger": HUGE, "budget_kind": "soft",
                              "turns": data.turns})
    result, _ = replay(data, scenario, "noop")
    before = _utilization_before_calls(result, data.turns)
    ours, api = [], []
    for turn, p in enumerate(prompt, 1):
        if isinstance(p, int) and p > 0 and before[turn] > 0:
            ours.append(before[turn])
            api.append(p)
    return Calls(data.name, model_name(data.header.get("model") or ""), ours, api) if ours else None


def _utilization_before_calls(result, turns: int) -> list[int]:
    """Utilization just before turn k's model call, k = 1..turns (index 0 unused)."""
    t = result.recorder.trace
    end_of = [0] * (turns + 1)  # utilization after the last change of each turn
    seen = [False] * (turns + 1)
    for turn, util in zip(t["turn"], t["utilization"], strict=True):
        end_of[turn] = util
        seen[turn] = True
    before = [0] * (turns + 1)
    current = 0
    for k in range(1, turns + 1):
        if seen[k - 1]:
            current = end_of[k - 1]
        before[k] = current
    return before


def fit_scales(all_calls: Iterable[Calls]) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for c in all_calls:
        r = np.asarray(c.ours, float) / np.asarray(c.api, float)
        s = sums.setdefault(c.model, [0.0, 0.0])
        s[0] += float(r.sum())
        s[1] += float((r * r).sum())
    return {m: (s[0] / s[1] if s[1] > 0 else 1.0) for m, s in sorted(sums.items())}


def error_of(c: Calls, scale: float) -> float:
    x = np.asarray(c.ours, float)
    p = np.asarray(c.api, float)
    return float(np.mean(np.abs(scale * x - p) / p))


def report(all_calls: list[Calls], tokenizer: str, skipped: int = 0) -> dict:
    scales = fit_scales(all_calls)
    rows = [
        {"transcript": c.name, "model": c.model, "calls": len(c.ours), "error": round(error_of(c, scales[c.model]), 6)}
        for c in all_calls
    ]
    errors = np.array([r["error"] for r in rows], float)
    return {
        "tokenizer": tokenizer,
        "transcripts": len(rows),
        "skipped": skipped,
        "scale": {m: round(a, 6) for m, a in scales.items()},
        "median_error": round(float(np.median(errors)), 6) if len(rows) else None,
        "p90_error": round(float(np.percentile(errors, 90)), 6) if len(rows) else None,
        "per_transcript": rows,
    }
