"""The arms of an outcome study: which scaffold, model and policy each is, its raw arm, and its four figures.

An outcome file (:mod:`prunesim.io.outcomes`) holds arms: the same instances run by one scaffold and model
with the full context (*raw*) or under a context policy. This module reads what an arm is from its
experiment's name and strategy, pairs every policy arm with the raw arm of the same model (and instance
subset), and computes the four figures a forecast is judged on (:data:`FIGURES`), as recorded.

How a scaffold counts turns (from the files, docs/outcomes.md):

* SWE-agent: ``turn_count`` is the agent's calls; its cap (250 calls) counts summary calls too, so a run is at
  the cap when ``turn_count + summary_count >= 250`` (a capped run records 251, the autosubmit call);
* OpenHands: a condensation is an agent step (``turn_count`` includes it; summaries come every 22 turns for
  N = 21), ``maxiter`` is 250 and capped runs pile up at 245-250, so a run is at the cap when
  ``turn_count >= 245``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from prunesim.errors import UserError
from prunesim.io.outcomes import Arm

FIGURES = ("solve_rate", "median_turns", "total_cost", "capped_share")
SCAFFOLDS = ("swe-agent", "openhands")


@dataclass(frozen=True)
class Counting:
    """How a scaffold's file counts turns and the cap (see the module docstring)."""

    cap: int  # the scaffold's cap on the calls it counts
    capped_at: int  # a recorded run counts as capped from this many counted calls
    turns_include_summaries: bool  # turn_count already holds the summary calls


COUNTING = {"swe-agent": Counting(250, 250, False), "openhands": Counting(250, 245, True)}


def counted_calls(arm: Arm, scaffold: str) -> np.ndarray:
    """The calls the scaffold's cap counts, per run."""
    c = COUNTING[scaffold]
    return arm.turns if c.turns_include_summaries else arm.turns + arm.summary_count


def figures(arm: Arm, scaffold: str, weights: np.ndarray | None = None) -> dict[str, float]:
    """The arm's four figures as recorded; ``weights`` (counts per row, a bootstrap's) weigh its rows."""
    w = np.ones(arm.n) if weights is None else np.asarray(weights, dtype=float)
    total = w.sum()
    capped = counted_calls(arm, scaffold) >= COUNTING[scaffold].capped_at
    return {"solve_rate": float((w * arm.solved).sum() / total),
            "median_turns": weighted_median(arm.turns, w),
            "total_cost": float((w * (arm.cost + arm.summary_cost)).sum()),
            "capped_share": float((w * capped).sum() / total)}


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """The median of ``values``, each repeated ``weights`` times (whole counts, a bootstrap's; ones: numpy's)."""
    order = np.argsort(values, kind="stable")
    v, c = np.asarray(values, dtype=float)[order], np.cumsum(np.asarray(weights, dtype=np.int64)[order])
    total = int(c[-1]) if len(c) else 0
    if total == 0:
        return float("nan")

    def kth(k: int) -> float:  # the k-th smallest (1-based)
        return float(v[np.searchsorted(c, k, side="left")])

    return kth((total + 1) // 2) if total % 2 else (kth(total // 2) + kth(total // 2 + 1)) / 2


# -- what an arm is ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ArmKind:
    """What an experiment's name and strategy say it ran."""

    scaffold: str
    model: str
    subset: str  # "" for the full instance set, else the subset's tag (OpenHands' "verified_50")
    strategy: str  # "raw", "masking", "summary" or "other"
    n: int | None = None  # a summary's N (turns summarized at a time)
    m: int | None = None  # masking's window (observations for SWE-agent, events for OpenHands); a summary's M

    @property
    def setting(self) -> tuple:
        """Arms with the same setting ran the same policy on the same model (twins on overlapping instances)."""
        return (self.scaffold, self.model, self.strategy, self.n, self.m)


_SWE_STRATEGIES = {"raw agent": "raw", "observation masking": "masking", "llm-summary": "summary"}


def scaffold_of(arm: Arm) -> str:
    """SWE-agent's files carry a strategy column; OpenHands' experiments name their ``maxiter``."""
    if "maxiter" in arm.experiment:
        return "openhands"
    if arm.strategy:
        return "swe-agent"
    raise UserError(arm.file, "experiment", f"{arm.experiment!r}: cannot tell its scaffold (an OpenHands "
                    "experiment names its maxiter; a SWE-agent file has a strategy column)")


def kind_of(arm: Arm) -> ArmKind:
    scaffold = scaffold_of(arm)
    name = arm.experiment
    if scaffold == "swe-agent":
        model = re.split(r"-(?:agent|baseline|t_\d)", name, maxsplit=1)[0]
        strategy = _SWE_STRATEGIES.get(arm.strategy.lower(), "other")
        subset = ""
    else:
        model = name.split("_maxiter", 1)[0]
        strategy = ("raw" if "raw_agent" in name else "masking" if "observation_masking" in name
                    else "summary" if "llm_summary" in name else "other")
        found = re.search(r"verified_(\d+)", name)
        subset = found.group(0) if found else ""
    nm = re.search(r"N_(\d+)_M_(\d+)", name)
    n = m = None
    if strategy == "summary" and nm:
        n, m = int(nm.group(1)), int(nm.group(2))
    elif strategy == "masking":
        found = re.search(r"M_(\d+)", name)
        # OpenHands' 500-instance masking arm has no M in its name; its figures match M = 10 (the README's word)
        m = int(found.group(1)) if found else 10
    return ArmKind(scaffold, model, subset, strategy, n, m)


def policy_of(kind: ArmKind) -> tuple[str, dict[str, int]]:
    """The prunesim policy and the scenario values (``--set``) that run what the arm ran."""
    if kind.strategy == "masking":
        preset = "complexity-trap" if kind.scaffold == "swe-agent" else "openhands"
        return f"observation-masking:{preset}", {"observation_masking.n": kind.m}
    if kind.strategy == "summary":
        return "llm-summary:complexity-trap", {"llm_summary.threshold": kind.n, "llm_summary.keep_turns": kind.m}
    raise UserError("outcomes", None, f"no prunesim policy is known for a {kind.strategy} arm")


@dataclass(frozen=True)
class Pair:
    """A policy arm and the raw arm of the same model and instances."""

    arm: Arm
    raw: Arm
    kind: ArmKind

    def common(self) -> tuple[np.ndarray, np.ndarray]:
        """Row indices of the instances both arms ran: into the raw arm, and into the policy arm."""
        at = {inst: i for i, inst in enumerate(self.arm.instances)}
        raw_idx = [i for i, inst in enumerate(self.raw.instances) if inst in at]
        return np.array(raw_idx, dtype=np.int64), np.array([at[self.raw.instances[i]] for i in raw_idx],
                                                           dtype=np.int64)


def pairs(arms: list[Arm]) -> list[Pair]:
    """Every policy arm with its raw arm: the same scaffold, model and subset, the most instances in common."""
    kinds = [kind_of(a) for a in arms]
    raws = [(a, k) for a, k in zip(arms, kinds, strict=True) if k.strategy == "raw"]
    out = []
    for arm, kind in zip(arms, kinds, strict=True):
        if kind.strategy in ("raw", "other"):
            continue
        match = [(a, k) for a, k in raws if (k.scaffold, k.model, k.subset) == (kind.scaffold, kind.model,
                                                                               kind.subset)]
        if not match:
            raise UserError(arm.file, "experiment", f"{arm.experiment!r}: no raw arm of model {kind.model!r}"
                            + (f" on {kind.subset}" if kind.subset else "") + " to compare it with")
        shared = [len(set(a.instances) & set(arm.instances)) for a, _ in match]
        out.append(Pair(arm, match[int(np.argmax(shared))][0], kind))
    return out
