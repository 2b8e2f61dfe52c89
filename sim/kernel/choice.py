"""Which engine runs a study's runs: the SimPy engine (the reference) or the compiled kernel.

The kernel covers synthetic runs of the built-in ``noop`` and ``naive`` policies
under every workload field (sizes, staleness, repeats, keys, scripted events,
``tool_output_early``, ``turn_unit``), both budget kinds and every decision
field but ``concurrent``. Anything else (another policy, needs, a concurrent
pass, a user's policy, observers, traces, transcripts) runs on the SimPy
engine: ``auto`` never approximates, and ``--engine kernel`` refuses it.
"""

from __future__ import annotations

from collections.abc import Sequence

from prunesim.errors import UserError
from prunesim.model.scenario import Scenario

ENGINES = ("simpy", "kernel", "auto")
KERNEL_POLICIES = ("noop", "naive")
# Turns (runs x turns) below which auto keeps SimPy: loading the compiled loop costs more than it saves.
AUTO_MIN_TURNS = 200_000


def kernel_gap(scenario: Scenario, policy) -> str:
    """Why the kernel cannot run ``policy`` on ``scenario`` ("" when it can)."""
    if not isinstance(policy, str) or policy not in KERNEL_POLICIES:
        return f"policy {policy!r} (the kernel runs {', '.join(KERNEL_POLICIES)})"
    if scenario.need.enabled:
        return "[need] (the agent's needs)"
    if scenario.decision.concurrent:
        return "decision.concurrent"
    try:
        import numba  # noqa: F401  (an optional extra)
    except ImportError:
        return "numba, which is not installed (pip install 'prunesim[kernel]')"
    return ""


def pick(engine: str, work: Sequence[tuple[Scenario, object]], turns: int, flag: str = "--engine") -> str:
    """The engine for runs of ``work`` ((scenario, policy) pairs) adding up to ``turns`` turns.

    ``kernel`` raises a :class:`~prunesim.errors.UserError` naming what the kernel does not cover;
    ``auto`` gives ``kernel`` only when it covers all of ``work`` and there are enough turns.
    """
    if engine not in ENGINES:
        raise UserError(flag, None, f"unknown engine {engine!r} (one of {', '.join(ENGINES)})")
    if engine == "simpy":
        return "simpy"
    gaps = [gap for gap in (kernel_gap(sc, p) for sc, p in work) if gap]
    if engine == "kernel":
        if gaps:
            raise UserError(flag, None, f"the kernel does not cover {gaps[0]}: use --engine simpy or auto")
        return "kernel"
    return "kernel" if not gaps and turns >= AUTO_MIN_TURNS else "simpy"


def summary(scenario: Scenario, policy, seed: int, engine: str) -> dict:
    """One run's summary (``trace="none"``) on ``engine`` (``simpy`` or ``kernel``, as :func:`pick` chose)."""
    if engine == "kernel":
        from prunesim.kernel.replay import run_summary
        return run_summary(scenario, policy, seed)
    from prunesim.runner import run_one
    return run_one(scenario, policy, seed, trace="none").summary
