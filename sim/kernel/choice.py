"""Which engine runs a study's runs: the SimPy engine (the reference) or the compiled kernel.

The kernel covers synthetic runs of the built-in ``noop``, ``naive``, ``recency``
and ``slack-gated`` (its ``recency`` fallback) policies under every workload
field (sizes, staleness, repeats, keys, scripted events, ``tool_output_early``,
``turn_unit``), both budget kinds, every pricing and prompt cache, and every
decision field; ``concurrent`` (a model-driven pass run beside the agent's turns)
only for ``noop`` and ``recency``, which never run a pass, so that it changes
nothing in their runs. Anything else (another policy, needs, a concurrent pass
of naive or slack-gated, another gate fallback, a user's policy, an observer added to
the registry, traces, transcripts, a run too long for the kernel's record of it)
runs on the SimPy engine: ``auto`` never approximates, and ``--engine kernel`` refuses it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from prunesim.errors import UserError
from prunesim.model.agent_profiles import resolve
from prunesim.model.scenario import Scenario
from prunesim.observe import REGISTRY

ENGINES = ("simpy", "kernel", "auto")
# The registered observers whose state kernel.summary sets from the fold's counters (EditLogCheck,
# ReactionMetrics and OutcomeMetrics hear nothing from a synthetic run of these policies without an agent model:
# their state stays as built).
FOLDED_OBSERVERS = ("WindowMetrics", "PassMetrics", "GateMetrics", "EvictionMetrics", "ProvenanceMetrics",
                    "EditLogCheck", "EditMetrics", "ReactionMetrics", "OutcomeMetrics", "CostMetrics")
KERNEL_POLICIES = ("noop", "naive", "recency", "slack-gated")
# Those that never return a model-driven pass: decision.concurrent (how the engine runs a pass) never acts in their
# runs, so the kernel, which runs passes in line, gives their summaries with it set too.
PASSLESS_POLICIES = ("noop", "recency")
# kernel/bitgen.py builds numba's own value of a Generator (numba's data model, tested on 0.68): an older numba
# keeps the runs on SimPy (and pyproject asks for this one).
MIN_NUMBA = (0, 68)
# Turns (runs x turns) below which auto keeps SimPy. In runs of 60 turns the kernel saves 13 us of CPU a turn (noop;
# naive about 46: benchmarks/bench_kernel.py); in long runs, where SimPy has no run's set-up to spread, a noop turn
# still saves about 5 (SimPy's 5.7 us a turn: benchmarks/bench_floor.py). Its first use in an install compiles it
# for 10 to 25 s (numba keeps the result): only millions of turns win that back. Once compiled, loading takes
# about 0.3 s: 100,000 turns do.
AUTO_MIN_TURNS = 2_000_000
AUTO_MIN_TURNS_COMPILED = 100_000
# The kernel holds a whole run's record (its arrivals, every event row, the span table) until the fold has read it:
# about 5 kB a turn allocated, 2.3 kB of it resident (1,500,000 turns of oscillation-40 under naive: 3.5 GB; the
# SimPy engine, which streams a run, stays near 45 MB). A run whose record would take more runs on SimPy.
MAX_RECORD_BYTES = 2 << 30


class KernelRefused(UserError):
    """``--engine kernel`` on runs the kernel does not cover: the user's choice of engine, not a fault of the
    scenario (a calibration's candidate that raises it is not an infeasible candidate: the study stops)."""


def kernel_gap(scenario: Scenario, policy) -> str:
    """Why the kernel cannot run ``policy`` on ``scenario`` ("" when it can)."""
    if not isinstance(policy, str) or policy not in KERNEL_POLICIES:
        return f"policy {policy!r} (the kernel runs {', '.join(KERNEL_POLICIES)})"
    if policy == "slack-gated":
        gate = scenario.tables.get("gate")
        if gate is not None and gate.fallback != "recency":
            return f"gate.fallback = {gate.fallback!r} (the kernel runs the recency fallback)"
    if scenario.need.enabled:
        return "[need] (the agent's needs)"
    if resolve(scenario.agent) is not None:
        return f"[agent] profile {scenario.agent.profile!r} (the agent model)"
    if scenario.decision.concurrent and policy not in PASSLESS_POLICIES:
        return "decision.concurrent"
    need = record_bytes(scenario)
    if need > MAX_RECORD_BYTES:
        return (f"runs of {scenario.turns:,} turns (the kernel holds a run's whole record: "
                f"{need / (1 << 30):.1f} GiB, above its {MAX_RECORD_BYTES >> 30} GiB; the SimPy engine streams it)")
    unknown = [name for name, cls in REGISTRY.items() if cls.__name__ not in FOLDED_OBSERVERS]
    if unknown:  # an observer the kernel's fold does not feed would miss the run's events
        return f"the observer {unknown[0]!r}"
    try:
        import numba  # (an optional extra)
    except ImportError:
        return "this install: numba is not installed (pip install 'prunesim[kernel]')"
    if numba_version(numba.__version__) < MIN_NUMBA:
        return (f"this install: numba {numba.__version__} (the kernel needs {'.'.join(map(str, MIN_NUMBA))} or "
                "later: pip install 'prunesim[kernel]')")
    return ""


def numba_version(text: str) -> tuple[int, int]:
    """(major, minor) of a numba version string ("0.68.1", "0.69.0rc1"); (0, 0) when it is not one."""
    parts = text.split(".")
    try:
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0) if len(parts) > 1 else 0
    except ValueError:
        return 0, 0


def record_bytes(scenario: Scenario) -> int:
    """The bytes the kernel allocates for one run of ``scenario`` (the arrays of draws.arrivals, loop.simulate and
    fold.fold, sized as they size them: for every row the run could write)."""
    turns = scenario.turns
    arrivals = len(scenario.workload.initial) + 3 * turns + len(scenario.workload.events)
    spans = arrivals + 2 * turns + 8
    rows = 7 * turns + 4 * spans
    loop = rows * (11 + 1) * 8 + spans * (13 + 5) * 8 + (turns + 1) * 17 * 8  # (its span table, order, scratch, names)
    fold = rows * (2 + 4) * 8 + spans * (2 * 8 + 1) + 3 * 2 * turns * 3 * 8
    return arrivals * 10 * 8 + loop + fold


def pick(engine: str, work: Sequence[tuple[Scenario, object]], turns: int, flag: str = "--engine") -> str:
    """The engine for runs of ``work`` ((scenario, policy) pairs) adding up to ``turns`` turns.

    ``kernel`` raises a :class:`~prunesim.errors.UserError` naming what the kernel does not cover;
    ``auto`` gives ``kernel`` only when it covers all of ``work`` and there are enough turns
    (:func:`auto_min_turns`).
    """
    if engine not in ENGINES:
        raise UserError(flag, None, f"unknown engine {engine!r} (one of {', '.join(ENGINES)})")
    if engine == "simpy":
        return "simpy"
    gaps = [gap for gap in (kernel_gap(sc, p) for sc, p in work) if gap]
    if engine == "kernel":
        if gaps:
            raise KernelRefused(flag, None, f"the kernel does not cover {gaps[0]}: use --engine simpy or auto")
        return "kernel"
    return "kernel" if not gaps and turns >= auto_min_turns() else "simpy"


def auto_min_turns() -> int:
    """The work below which ``auto`` keeps SimPy: less when numba's cache already holds the compiled kernel."""
    return AUTO_MIN_TURNS_COMPILED if compiled() else AUTO_MIN_TURNS


def compiled() -> bool:
    """Whether numba's cache holds the kernel compiled from its current source (else its first run compiles it)."""
    try:
        from prunesim.kernel import fold
        return bool(fold.run._cache._cache_file._load_index())  # (numba's index, checked against the source)
    except Exception:  # noqa: BLE001  (numba's cache layout is its own: when it cannot be read, assume no cache)
        return False


def summary(scenario: Scenario, policy, seed: int, engine: str) -> dict:
    """One run's summary (``trace="none"``) on ``engine`` (``simpy`` or ``kernel``, as :func:`pick` chose)."""
    if engine == "kernel":
        from prunesim.kernel.summary import run_summary
        return run_summary(scenario, policy, seed)
    from prunesim.runner import run_one
    return run_one(scenario, policy, seed, trace="none").summary


class EngineChoice:
    """The engine of each variant of a study, chosen once before any run and checked on every scenario it runs.

    ``work`` maps a variant's label to its (scenario, policy); ``turns`` is the study's whole work in turns
    (runs x turns), what ``auto`` weighs against loading the compiled loop. A candidate scenario that leaves
    what the kernel covers (a fitted need rate, say) runs on SimPy under ``auto`` and is refused under
    ``kernel``.
    """

    def __init__(self, requested: str = "simpy", work: dict | None = None, turns: int = 0, flag: str = "--engine",
                 note: Callable[[str], None] | None = None):
        self.requested = requested
        self.flag = flag
        # Told once per variant when auto runs a candidate of a variant chosen for the kernel on SimPy, so that
        # the line describe() gave before the runs is not all that is said of where they ran.
        self.note = note
        self.fell_back: dict[str, str] = {}
        self.chosen = {label: pick(requested, [pair], turns, flag) for label, pair in (work or {}).items()}
        self.gaps = {label: kernel_gap(*pair) for label, pair in (work or {}).items()}
        if requested not in ENGINES:  # no variant to choose for: the name is still checked
            pick(requested, [], turns, flag)
        self._kernel = None  # the compiled kernel, loaded at its first run; it keeps each seed's draws

    def _kernel_runs(self):
        if self._kernel is None:
            from prunesim.kernel.summary import Kernel
            self._kernel = Kernel()
        return self._kernel

    def summaries(self, label: str, scenario: Scenario, policy, seeds: Sequence[int]) -> list[dict]:
        """One summary per seed of ``policy`` on ``scenario``, on the engine chosen for ``label``."""
        engine = self.chosen.get(label, "simpy")
        if engine == "kernel":
            gap = kernel_gap(scenario, policy)
            if gap and self.requested == "kernel":
                raise KernelRefused(self.flag, None, f"the kernel does not cover {gap} ({label}): use --engine "
                                "simpy or auto")
            if not gap:
                return self._kernel_runs().summaries(scenario, policy, seeds)
            if label not in self.fell_back:
                self.fell_back[label] = gap
                if self.note is not None:
                    self.note(f"engine: simpy for the candidates of {label} the kernel does not cover: {gap}")
        return [summary(scenario, policy, seed, "simpy") for seed in seeds]

    def describe(self) -> str:
        """One line: which engine runs which variant, and why a variant stays on SimPy."""
        on = {e: [label for label, chosen in self.chosen.items() if chosen == e] for e in ("kernel", "simpy")}
        parts = []
        if on["kernel"]:
            parts.append(f"kernel for {', '.join(on['kernel'])}")
        if on["simpy"]:
            why = [f"{label}: {self.gaps[label]}" if self.gaps[label] else f"{label}: too few turns to pay"
                   for label in on["simpy"]]
            parts.append(f"simpy for {'; '.join(why)}" if self.requested != "simpy" else "simpy")
        return "engine: " + ("; ".join(parts) or "simpy")
