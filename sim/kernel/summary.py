"""A kernel run's summary: the compiled draws, loop and fold, then the observers' own summary code on the counters.

:class:`Kernel` runs what :func:`prunesim.runner.run_one` runs for ``trace="none"``
(the policy's tables filled in as there, the run's random streams as
:func:`prunesim.runner.streams` makes them, by :mod:`prunesim.kernel.seeds`,
handed to compiled code by :mod:`prunesim.kernel.bitgen`): the workload's arrivals
(:mod:`prunesim.kernel.draws`), the turn loop (:mod:`prunesim.kernel.loop`)
and the metrics' counters (:mod:`prunesim.kernel.fold`), all compiled. The
counters are then set on the registered observers, and
:func:`prunesim.observe.metrics.summarize` asks them for their figures as
after any run: every figure is computed by the code that computes it for the
SimPy engine. A kernel keeps, per seed, the workload's standard variates and
the policy stream's start, so that a study rerunning the same seeds on many
candidate scenarios draws them once.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from prunesim.kernel import draws, fold, loop
from prunesim.kernel.bitgen import addresses
from prunesim.kernel.seeds import start_states
from prunesim.model.provenance import is_marker
from prunesim.model.scenario import Scenario
from prunesim.model.spans import KINDS, SYSTEM_PROMPT, Span
from prunesim.model.workload import CHUNK, early_factor
from prunesim.observe import REGISTRY, RunContext
from prunesim.observe.metrics import summarize
from prunesim.observe.metrics.cost import CostMetrics
from prunesim.observe.metrics.edits import EditMetrics
from prunesim.observe.metrics.eviction import EvictionMetrics
from prunesim.observe.metrics.gate import GateMetrics
from prunesim.observe.metrics.passes import PassMetrics
from prunesim.observe.metrics.provenance import ProvenanceMetrics
from prunesim.observe.metrics.window import WindowMetrics
from prunesim.policies import get_policy, policy_name
from prunesim.policies.boundary import REASONS
from prunesim.runner import scenario_for, streams

KIND_CODE = {kind: i for i, kind in enumerate(KINDS)}
POLICY_CODE = {"noop": loop.NOOP, "naive": loop.NAIVE, "recency": loop.RECENCY, "slack-gated": loop.SLACK_GATED}
CACHE_CODE = {"explicit": fold.EXPLICIT, "implicit": fold.IMPLICIT, "none": fold.NO_CACHE}
PRUNE_KINDS = np.array([KIND_CODE["prune_index"], KIND_CODE["prune_rationale"]], dtype=np.int64)
MARKER_KINDS = np.array([KIND_CODE[k] for k in ("prune_rationale", "placeholder", "summary", "tombstone")],
                        dtype=np.int64)


def _template(kind: str, tokens: int, stale_after: int, pinned: bool = False, tags=(), replaces: bool = False,
              keyed: bool = False) -> list[int]:
    return [KIND_CODE[kind], tokens, stale_after, pinned, *_span_flags(kind, pinned, frozenset(tags)), replaces, keyed]


@lru_cache(maxsize=1024)
def _span_flags(kind: str, pinned: bool, tags: frozenset) -> tuple[bool, bool, bool, bool]:
    """A span's offerable, constraint, marker and system-prompt flags, as its Span says (they depend on its kind,
    pin and tags only: a scenario's spans share a few of them, and a Span costs more to make than to look up)."""
    span = Span(0, kind, 0, 0, "", 0, pinned, tags)
    return span.offerable, span.is_constraint, is_marker(span), SYSTEM_PROMPT in span.tags


def _templates(rows: list[list[int]]) -> np.ndarray:
    return np.asarray(rows, dtype=np.int64).reshape(len(rows), draws.TEMPLATE_COLUMNS)


class _FoldedBand(WindowMetrics):
    """The window metrics with the band's sums and quantiles taken from the fold (kernel.fold._band computes
    them as :meth:`WindowMetrics.band_sums` does, from the same seconds in the same order)."""

    folded_band: tuple = ((0.0, 0.0, 0.0), -1, -1)

    def band_sums(self) -> tuple[tuple[float, float, float], int, int]:
        return self.folded_band


# The draws' patterns as fold.variates takes them, by their flags.
_PATTERNS: dict[tuple, np.ndarray] = {}
# The observers whose state a run's counters set (each found once per Prepared, not looked for at every run).
_ROLES = (WindowMetrics, PassMetrics, GateMetrics, EvictionMetrics, ProvenanceMetrics, CostMetrics, EditMetrics)


class Prepared:
    """What runs of one policy on one scenario share: the loop's, the draws' and the fold's constant inputs."""

    def __init__(self, scenario: Scenario, policy: str, rng: np.random.Generator | None = None):
        cls = get_policy(policy)
        self.name = name = policy_name(policy)
        self.scenario = scenario = scenario_for(scenario, cls)  # as run_one: its tables filled in and checked
        # (the policy's object only says where it acts; ``rng`` is any generator: the object draws nothing)
        self.acting_trigger = cls(scenario, rng or np.random.default_rng(0)).acting_trigger()
        w, lat, d = scenario.workload, scenario.latency, scenario.decision
        self.turns = scenario.turns
        self.chunks = max(1, -(-scenario.turns // CHUNK))
        p_stale = np.array([1.0 / w.reasoning_stale_after, 1.0 / w.output_stale_after])
        search = p_stale >= draws.GEOMETRIC_SEARCH_P
        repeat_search = w.repeat_rate > 0 and 1.0 / w.repeat_gap_mean >= draws.GEOMETRIC_SEARCH_P
        self.pattern = np.array([w.reasoning.sigma > 0, w.tool_call.sigma > 0, w.tool_output.sigma > 0, search[0],
                                 search[1], lat.tool_mean_s > 0, w.repeat_rate > 0, repeat_search], dtype=np.int64)
        # lognormal_sizes' and the tool latency's mu, written as the workload writes them
        self.sizes = np.array([[np.log(s.mean) - s.sigma**2 / 2, s.sigma, s.mean, s.min, s.max]
                               for s in (w.reasoning, w.tool_call, w.tool_output)], dtype=np.float64)
        self.p_stale = p_stale
        self.tool = np.array([np.log(max(lat.tool_mean_s, 1e-9)) - lat.tool_sigma**2 / 2, lat.tool_sigma])
        scale = [early_factor(w, 1 + k * CHUNK, CHUNK) for k in range(self.chunks)]
        self.scale = np.concatenate(scale)[:self.turns] if scale[0] is not None else np.ones(self.turns)
        events = sorted((e for e in w.events if 1 <= e.turn <= scenario.turns), key=lambda e: e.turn)
        rows = [_template(s.kind, s.tokens, s.stale_after, s.pinned, s.tags) for s in w.initial]
        rows += [_template("reasoning", 0, 0), _template("tool_call", 0, 0), _template("tool_output", 0, 0)]
        rows += [_template(e.kind, e.tokens, e.stale_after, e.pinned, e.tags,
                           e.replaces_output and e.kind == "tool_output", bool(e.key)) for e in events]
        table = _templates(rows)  # the initial spans' templates, then the loop's own kinds and the scripted events'
        self.initial, self.templates = table[:len(w.initial)], table[len(w.initial):]
        event_first = np.zeros(scenario.turns + 1, dtype=np.int64)  # turn t's events start at event_first[t - 1]
        for e in events:
            event_first[e.turn:] += 1
        self.event_first = event_first
        # the loop's
        self.dec = np.array([d.index_base, d.index_per_candidate, d.rationale_base, d.rationale_per_span,
                             d.rationale_sigma, d.select_mean, d.reclaim_target, d.selection_quality])
        self.prune_kinds = PRUNE_KINDS
        self.latency = np.array([lat.model_base_s, lat.model_per_input_token_s, lat.model_per_output_token_s])
        self.gate = np.zeros(8)
        if name == "slack-gated":
            g = scenario.gate
            acts_at = scenario.trigger - g.lead
            fixed = g.prior_yield is not None
            self.gate = np.array([acts_at, acts_at - g.low_water_gap, g.margin_factor, g.knowledge == "estimate",
                                  g.prior_yield if fixed else 0.0, g.prior_rationale, fixed, g.prior_selections],
                                 dtype=np.float64)
        numbers = [0] * fold.NUMBERS
        numbers[fold.N_POLICY], numbers[fold.N_TURNS], numbers[fold.N_TURN_UNIT] = POLICY_CODE[name], self.turns, \
            w.turn_unit
        numbers[fold.N_CEILING] = scenario.budget if scenario.hard else scenario.window
        numbers[fold.N_BUDGET], numbers[fold.N_TRIGGER] = scenario.budget, scenario.trigger
        numbers[fold.N_SELECT_MAX], numbers[fold.N_PROTECT_RECENT] = d.select_max, d.protect_recent_turns
        numbers[fold.N_REENTRANT] = d.reentrant and name == "naive"
        numbers[fold.N_LOW_WATER] = scenario.recency.low_water_gap if name == "recency" else 0
        self.numbers = np.array(numbers, dtype=np.int64)
        # the fold's
        self.context = RunContext(scenario, name, scenario.seed, self.acting_trigger, "none")
        self.observers = [(_FoldedBand if cls is WindowMetrics else cls)(self.context) for cls in REGISTRY.values()]
        by_class = {WindowMetrics if type(o) is _FoldedBand else type(o): o for o in self.observers}
        self._roles = {cls: by_class.get(cls) for cls in _ROLES}
        cost = self._roles[CostMetrics]
        self.run_numbers = np.array([scenario.turns, self.acting_trigger, scenario.budget, scenario.hard])
        cache = cost.cache  # (the prompt cache's own settings, as the fold mirrors it)
        self.cache = np.array([CACHE_CODE[cache.behaviour], cache.ttl, cache.min_tokens, cache.g, cache.breakpoints,
                               cache.lookback, cache.reuse], dtype=np.float64)
        self.rates = np.array([*cost._rates, cost._rewrite_rate])
        self.marker_kinds = MARKER_KINDS
        # fold.run's arguments after the generator and the variates, in its order
        self.run_arrays = (self.pattern, self.sizes, self.p_stale, self.tool, self.scale, self.initial, self.templates,
                           self.event_first, self.latency, self.dec, self.prune_kinds, self.gate, self.run_numbers,
                           self.cache, self.rates, self.marker_kinds)

    def summary(self, counters: np.ndarray, floats: np.ndarray) -> dict:
        """The summary dict from a run's counters: set on the observers, then their own ``summary`` code."""
        c = counters.tolist()
        f = floats.tolist()
        roles = self._roles
        obs = roles[WindowMetrics]
        if obs is not None:
            obs.peak, obs.first_trigger_turn, obs.band_floor = c[fold.PEAK], c[fold.FIRST_TRIGGER], c[fold.BAND_FLOOR]
            obs.folded_band = f[fold.HELD:fold.HELD_AT_CEILING + 1], c[fold.BAND_P10], c[fold.BAND_P90]
            obs.forced_truncations, obs.truncated_tokens = c[fold.FORCED], c[fold.TRUNCATED]
            obs.overflow_turns, obs.lost_constraints = c[fold.OVERFLOW], c[fold.LOST_CONSTRAINTS]
            obs.final_utilization, obs.sim_time = c[fold.FINAL], f[fold.SIM_TIME]
        obs = roles[PassMetrics]
        if obs is not None:
            (obs.pass_count, obs.passes_first, obs.passes_second, obs.trend.last, obs.trend.gaps,
             obs.trend.sum_gap, obs.trend.sum_order_gap, obs.first_pass_turn, obs.last_pass_turn,
             obs.sum_index, obs.sum_rationale, obs.sum_evicted, obs.sum_after, obs.net_negative,
             obs.zero_yield, obs.cut_passes, obs.in_band, obs.evicted_spans) = c[fold.PASSES:fold.EVICTED_SPANS + 1]
        obs = roles[GateMetrics]
        if obs is not None:
            obs.decisions = dict(zip(REASONS, c[fold.GATE_RUN:fold.GATE_INSUFFICIENT + 1], strict=True))
            obs.fallbacks, obs.fallback_tokens = c[fold.FALLBACKS], c[fold.FALLBACK_TOKENS]
            # every decision of the gate that ran a pass reported a bound (the oracle's are 0)
            obs.risk_sum, obs.risk_count = f[fold.GATE_RISK], c[fold.GATE_RUN] if self.name == "slack-gated" else 0
        obs = roles[EvictionMetrics]
        if obs is not None:
            (obs.non_model, obs.non_model_tokens, obs.evicted_spans, obs.needed_spans, obs.evicted_tokens,
             obs.needed_tokens) = c[fold.NON_MODEL:fold.NEEDED_TOKENS + 1]
        obs = roles[ProvenanceMetrics]
        if obs is not None:
            obs.unrecorded_evictions, obs.tombstone_tokens = c[fold.UNRECORDED], c[fold.TOMBSTONE_TOKENS]
        obs = roles[CostMetrics]
        if obs is not None:
            (obs.input_billed, obs.output_billed, obs.decision_billed, obs.decision_output, obs.read, obs.write,
             obs.uncached, obs.invalidations, obs.invalidated) = c[fold.INPUT:fold.INVALIDATED + 1]
            obs.cost, obs.decision_cost, obs.invalidation_cost = f[fold.COST:fold.INVALIDATION_COST + 1]
        obs = roles[EditMetrics]
        if obs is not None:
            obs.placeholder_tokens = c[fold.PLACEHOLDER_TOKENS]
        return summarize(self.observers)


class Kernel:
    """Runs summaries on the compiled kernel, keeping each seed's draws for the next scenario that runs it.

    What it keeps is bounded: ``variates_bytes`` of the workload's variates (48 bytes a seed and turn) and
    ``seeds`` seeds' stream starts, the oldest forgotten first (drawn again if they come back).
    """

    def __init__(self, variates_bytes: int = 64 << 20, seeds: int = 16_384):
        self._variates: dict[tuple, np.ndarray] = {}  # per (seed, pattern)
        self._variates_bytes = 0
        self._max_bytes = variates_bytes
        self._starts: dict[int, tuple[dict, dict]] = {}  # per seed: the workload and policy streams' start states
        self._max_seeds = seeds
        # their states are set to each seed's own (making a seed's streams takes longer than setting a state)
        self._workload_rng = np.random.Generator(np.random.PCG64(0))
        self._policy_rng = np.random.Generator(np.random.PCG64(0))
        # what the compiled code draws from: their addresses (kernel.bitgen), valid while the kernel keeps them
        self._workload_at, self._policy_at = addresses(self._workload_rng), addresses(self._policy_rng)

    def __getstate__(self) -> dict:
        """A copy or a pickle of a kernel keeps its generators, not their addresses (they would be the original's)."""
        state = dict(self.__dict__)
        del state["_workload_at"], state["_policy_at"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._workload_at, self._policy_at = addresses(self._workload_rng), addresses(self._policy_rng)

    def _streams(self, seed: int, pattern: tuple, turns: int) -> np.ndarray:
        """The seed's standard variates of the first ``turns`` turns for this pattern, and the policy stream's
        start set on the kernel's policy generator."""
        start = self._starts.get(seed)
        if start is None:
            if isinstance(seed, int) and seed >= 0:
                start = start_states(seed)
            else:  # (a seed numpy's SeedSequence takes that kernel.seeds does not: its own machinery)
                rngs = streams(seed)
                start = rngs["workload"].bit_generator.state, rngs["policy"].bit_generator.state
            self._starts[seed] = start
            if len(self._starts) > self._max_seeds:
                del self._starts[next(iter(self._starts))]
        key = (seed, pattern)
        variates = self._variates.get(key)
        if variates is None or variates.shape[1] < turns:
            variates = self._draw(key, start[0], turns)
        self._policy_rng.bit_generator.state = start[1]
        return variates

    def _draw(self, key: tuple, start: dict, turns: int) -> np.ndarray:
        """Draw ``key``'s variates from its workload stream's start, whole chunks as the workload draws them, and
        keep the first ``turns`` turns' (a run of fewer turns never reads the rest; keeping a whole chunk's
        50 kB for each seed of a study would cost more in fresh memory than drawing it); forget the oldest
        beyond the bound."""
        rng = self._workload_rng
        rng.bit_generator.state = start
        pattern = _PATTERNS.get(key[1])
        if pattern is None:
            pattern = _PATTERNS[key[1]] = np.array(key[1], dtype=np.int64)  # (256 patterns at most)
        if turns <= CHUNK:
            variates = fold.variates(self._workload_at, pattern, CHUNK, turns)
        else:
            variates = np.concatenate([fold.variates(self._workload_at, pattern, CHUNK, min(CHUNK, turns - k * CHUNK))
                                       for k in range(-(-turns // CHUNK))], axis=1)
        old = self._variates.pop(key, None)
        self._variates_bytes += variates.nbytes - (old.nbytes if old is not None else 0)
        self._variates[key] = variates
        while self._variates_bytes > self._max_bytes and len(self._variates) > 1:
            self._variates_bytes -= self._variates.pop(next(iter(self._variates))).nbytes
        return variates

    def summaries(self, scenario: Scenario, policy: str, seeds) -> list[dict]:
        """One summary per seed, each what run_one(scenario, policy, seed, trace="none") summarizes."""
        prep = Prepared(scenario, policy, self._policy_rng)
        pattern = tuple(prep.pattern.tolist())
        return [self._run(prep, pattern, seed) for seed in seeds]

    def _run(self, prep: Prepared, pattern: tuple, seed: int) -> dict:
        variates = self._streams(seed, pattern, prep.turns)
        counters, floats = fold.run(prep.numbers, self._policy_at, variates, *prep.run_arrays)
        return prep.summary(counters, floats)


def run_summary(scenario: Scenario, policy: str, seed: int | None = None) -> dict:
    """The summary :func:`prunesim.runner.run_one` gives for ``trace="none"``, computed by a fresh kernel."""
    return Kernel().summaries(scenario, policy, [scenario.seed if seed is None else seed])[0]


