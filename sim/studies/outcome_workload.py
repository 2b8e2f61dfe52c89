"""A raw arm's instances as workloads, and the price per token its rows imply.

Each started instance of a raw arm becomes a workload matched to its recorded size and length: ``W`` = its
recorded turns as work turns, a pinned base (the system prompt and task, the same for every instance of the arm)
and per-turn sizes chosen so that, with nothing removed, the mean prompt over its ``W`` calls is its recorded
mean prompt. The prompt of call ``t`` is then ``base + (t - 1) x growth``: each turn adds its tool call (the
recorded mean completion: what the model wrote, which stays in the history; reasoning tokens are billed but not
kept) and its tool output (the rest of the growth).

The base is the scaffold's: the 2nd percentile of mean prompt over the started runs of two turns or more of
its raw arms, the floor every run starts from (an instance whose mean prompt is lower gets its own mean as its
base). It is estimated per scaffold (the system prompt and the task statements are the scaffold's and the
benchmark's), from raw rows only, and a fit keeps it: a raw arm of one model has too few short runs to show
it (SWE-agent's Qwen3-Coder arm has none under ten turns; its own 2nd percentile is 8.0k tokens where the
scaffold's is 2.2k).

Prices: the arm's ``cost`` regressed on each run's prompt tokens (``turns x mean prompt``), its prompt tokens
times its mean prompt (``turns x mean prompt^2``: a price per prompt token that grows with the prompt, as a
local model's serving cost does) and its output tokens (``turns x (mean completion + mean reasoning)``) by
non-negative least squares, over started runs. The growth term enters only when it is positive and an F-test
against the flat price rejects at 5%: where the price per token is flat or falls with the prompt (a list price,
a prompt cache that reads more of a longer prompt) it is 0. The input price is the raw
arm's *effective* price: whatever prompt cache the raw runs enjoyed is inside it (docs/outcomes.md, "The cache
decides the sign").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from prunesim.errors import UserError
from prunesim.io.outcomes import Arm
from prunesim.model.workload import Arrival, TurnPlan

BASE_QUANTILE = 2.0  # percent
# The price's growth with the prompt enters when its F-test against a flat price rejects at this level.
GROWTH_TEST = 0.05


@dataclass(frozen=True, eq=False)
class Instances:
    """The workloads of an arm's instances, one entry per row (a run that failed to start has ``work`` 0)."""

    work: np.ndarray  # work turns W
    base: np.ndarray  # pinned tokens before the first call
    call: np.ndarray  # tokens each turn's tool call adds to the window
    output: np.ndarray  # tokens each turn's tool output adds
    billed_output: np.ndarray  # output tokens each work call bills (completion + reasoning, whole tokens)
    solved: np.ndarray  # the raw run's outcome
    started: np.ndarray

    @property
    def n(self) -> int:
        return len(self.work)


def base_tokens(arms: list[Arm]) -> int:
    """The base prompt of the raw ``arms`` of one scaffold (the module docstring); one line when none has a run to
    estimate it from."""
    prompts = np.concatenate([a.prompt[a.started & (a.turns >= 2)] for a in arms])
    if not len(prompts):
        raise UserError(arms[0].file, arms[0].experiment, "no started run of two turns or more to estimate the "
                        "base prompt from")
    return int(round(float(np.percentile(prompts, BASE_QUANTILE))))


def instances(arm: Arm, base: int | None = None) -> Instances:
    """Each row of ``arm`` as a workload (the module docstring); ``base``: the scaffold's (default: the arm's own
    rows, for an arm alone)."""
    base = base_tokens([arm]) if base is None else base
    work = np.where(arm.started, arm.turns, 0).astype(np.int64)
    own_base = np.minimum(base, np.rint(arm.prompt)).astype(np.int64)
    steps = np.maximum(work - 1, 1)
    growth = np.where(work > 1, 2 * (arm.prompt - own_base) / steps, 0.0)
    call = np.rint(np.minimum(arm.completion, growth)).astype(np.int64)
    # Every output is at least one token: a work item the window never held could not be needed or masked.
    output = np.maximum(np.rint(growth - call), 1).astype(np.int64)
    billed = np.rint(arm.completion + arm.reasoning).astype(np.int64)
    return Instances(work, own_base, call, output, billed, arm.solved.copy(), arm.started.copy())


class InstanceWorkload:
    """One instance as the engine's workload: its pinned base, then ``W`` turns of its sizes (keys ``w1``...).

    A synthetic workload (it names no scaffold): the agent model is given explicitly, and the profile's cap holds
    whatever ``W`` is (a recording longer than its cap would raise it).
    """

    def __init__(self, work: int, base: int, call: int, output: int, billed_output: int):
        self.turns, self.base, self.call, self.output, self.billed_output = work, base, call, output, billed_output

    def initial(self) -> list[Arrival]:
        return [Arrival("system", int(self.base), "task", pinned=True)] if self.base > 0 else []

    def __iter__(self):
        for t in range(1, self.turns + 1):
            key = f"w{t}"
            yield TurnPlan(t, Arrival("reasoning", 0, f"think-{t}"), Arrival("tool_call", int(self.call), key),
                           Arrival("tool_output", int(self.output), key), 0.0, output_tokens=int(self.billed_output))


@dataclass(frozen=True)
class Prices:
    """Price per prompt token (and its growth per token of the run's mean prompt) and per output token, in the
    file's units, and how well they fit the arm's costs."""

    input: float
    output: float
    r2: float
    runs: int
    growth: float = 0.0  # added to the input price per prompt token, per token of the run's mean prompt

    def prompt_cost(self, prompt: np.ndarray, calls: np.ndarray) -> np.ndarray:
        """The price of ``prompt`` tokens over ``calls`` calls (the growth term at their mean prompt)."""
        return self.input * np.asarray(prompt, dtype=float) + self.growth * prompt_by_mean(prompt, calls)

    def as_dict(self) -> dict:
        return {"input_per_million": self.input * 1e6, "output_per_million": self.output * 1e6, "r2": self.r2,
                "runs": self.runs, "input_growth_per_million_per_1k_prompt": self.growth * 1e9}


def prompt_by_mean(prompt: np.ndarray, calls: np.ndarray) -> np.ndarray:
    """Prompt tokens times their mean over the calls (``prompt^2 / calls``; 0 for no call)."""
    prompt, calls = np.asarray(prompt, dtype=float), np.asarray(calls, dtype=float)
    return np.where(calls > 0, prompt * prompt / np.maximum(calls, 1), 0.0)


def _nnls(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Non-negative least squares on scaled columns: the coefficients and the residual sum of squares."""
    from scipy.optimize import nnls  # late: only a forecast prices a run

    scale = x.max(axis=0)
    scale[scale == 0] = 1.0
    coef, _ = nnls(x / scale, y)
    coef = coef / scale
    return coef, float(((y - x @ coef) ** 2).sum())


def fit_prices(arm: Arm) -> Prices:
    """Non-negative least squares of ``cost`` on prompt and output tokens over the arm's started runs, with the
    price's growth with the prompt only where it earns its place (:data:`GROWTH_TEST`)."""
    from scipy.stats import f as f_dist  # late: as above

    ok = arm.started & (arm.turns > 0)
    if ok.sum() < 2:
        raise UserError(arm.file, arm.experiment, "fewer than two started runs to fit its prices on")
    prompt = arm.turns[ok] * arm.prompt[ok]
    output = arm.turns[ok] * (arm.completion[ok] + arm.reasoning[ok])
    y = arm.cost[ok]
    coef, rss = _nnls(np.column_stack([prompt, output]), y)
    growth = 0.0
    runs = int(ok.sum())
    if runs > 3:
        full, rss_full = _nnls(np.column_stack([prompt, output, prompt * arm.prompt[ok]]), y)
        gain = rss - rss_full
        if full[0] > 0 and full[2] > 0 and gain > 0 and (
                rss_full <= 0 or gain / (rss_full / (runs - 3)) > f_dist.ppf(1 - GROWTH_TEST, 1, runs - 3)):
            coef, rss, growth = full[:2], rss_full, float(full[2])
    total = ((y - y.mean()) ** 2).sum()
    r2 = float(1 - rss / total) if total > 0 else 1.0
    if coef[0] <= 0:
        raise UserError(arm.file, arm.experiment, "its costs do not grow with prompt tokens: no input price to fit")
    return Prices(float(coef[0]), float(coef[1]), r2, runs, growth)
