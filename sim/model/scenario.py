"""The scenario's types: one experiment as a tree of plain dataclasses.

Each table checks its own values (``check``) and reports a problem as a
:class:`~prunesim.errors.UserError` naming the file and the dotted key. Reading
TOML files and ``--set`` overrides is the I/O layer's work
(:mod:`prunesim.io.scenario_files`).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from prunesim.errors import UserError
from prunesim.model.agent_profiles import AgentParams
from prunesim.model.reaction import ReactionParams
from prunesim.model.spans import KINDS

# The rationale's size is rationale_per_span times a lognormal factor exp(sigma * z); above this
# sigma the factor overflows a float (and no model writes rationales spread over 40 orders of
# magnitude).
MAX_RATIONALE_SIGMA = 10.0


def searched(low: float, high: float, *, integer: bool = False, per_window: bool = False,
             by_unit: dict | None = None) -> dict:
    """A field's metadata declaring where ``prunesim tune`` searches it (the tuner holds no range of its own):
    ``low`` to ``high``, whole numbers when ``integer``, as shares of the run's window (in tokens) when
    ``per_window``; ``by_unit`` maps the table's ``unit`` to another declaration where the unit decides."""
    spec = {"low": low, "high": high, "integer": integer, "per_window": per_window}
    return {"search": {"by_unit": by_unit} if by_unit else spec}


# -- the schema ---------------------------------------------------------------
@dataclass
class SizeDist:
    """Token sizes drawn from a lognormal with this mean, clipped to [min, max]."""

    mean: float
    sigma: float = 0.5
    min: int = 1
    max: int = 100_000

    def check(self, key: str, where: str) -> None:
        positive(self.mean, f"{key}.mean", where)
        non_negative(self.sigma, f"{key}.sigma", where)
        non_negative(self.min, f"{key}.min", where)
        if self.max < self.min:
            raise UserError(where, f"{key}.max", f"{self.max} is below min {self.min}")


@dataclass
class InitialSpan:
    """A span present before the first turn (system prompt, constraints, task)."""

    kind: str
    tokens: int
    pinned: bool = True
    key: str = ""
    tags: list[str] = field(default_factory=list)
    stale_after: int = 1_000_000_000

    def check(self, key: str, where: str) -> None:
        span_kind(self.kind, f"{key}.kind", where)
        non_negative(self.tokens, f"{key}.tokens", where)
        non_negative(self.stale_after, f"{key}.stale_after", where)


@dataclass
class ScriptedEvent:
    """A span that arrives at a given turn, after the turn's own tool output.

    With ``replaces_output`` the event *is* that turn's tool output.
    """

    turn: int
    tokens: int
    kind: str = "tool_output"
    key: str = ""
    stale_after: int = 1_000_000_000
    tags: list[str] = field(default_factory=list)
    pinned: bool = False
    replaces_output: bool = True

    def check(self, key: str, where: str) -> None:
        positive(self.turn, f"{key}.turn", where)
        span_kind(self.kind, f"{key}.kind", where)
        non_negative(self.tokens, f"{key}.tokens", where)
        non_negative(self.stale_after, f"{key}.stale_after", where)


@dataclass
class Workload:
    """What arrives each turn: a reasoning span, a tool call and the tool's output."""

    reasoning: SizeDist = field(default_factory=lambda: SizeDist(150.0))
    tool_call: SizeDist = field(default_factory=lambda: SizeDist(40.0, 0.3))
    tool_output: SizeDist = field(default_factory=lambda: SizeDist(400.0, 0.8))
    reasoning_stale_after: float = 3.0
    output_stale_after: float = 8.0
    # Chance that a turn runs again a command of an earlier turn, that turn being a geometric number of
    # turns back with mean `repeat_gap_mean` (0: every command is new, and no extra draws are made).
    repeat_rate: float = 0.0
    repeat_gap_mean: float = 8.0
    # Length of a command's key in characters: 0 names commands "cmd-<turn>"; N > 0 gives each an opaque
    # key of N characters ("cmd " and hex), as real commands carry no turn number to compress.
    key_chars: int = 0
    # Tool outputs are larger early in a run: the mean at turn t is tool_output.mean x (1 + early x
    # exp(-(t - 1) / early_turns)) (0: every turn draws from one distribution). See docs/model.md.
    tool_output_early: float = 0.0
    tool_output_early_turns: float = 1.0
    # A turn is one prunable unit: its reasoning and call enter the window inside its tool output's
    # span, so that they are evicted, cleared or kept together (docs/model.md, "A turn is what gets evicted").
    turn_unit: bool = False
    initial: list[InitialSpan] = field(default_factory=list)
    events: list[ScriptedEvent] = field(default_factory=list)

    def check(self, key: str, where: str) -> None:
        fraction(self.repeat_rate, f"{key}.repeat_rate", where)
        if self.repeat_gap_mean < 1:
            raise UserError(where, f"{key}.repeat_gap_mean", f"must be at least 1 (got {self.repeat_gap_mean})")
        if self.key_chars and not 8 <= self.key_chars <= 200:
            raise UserError(where, f"{key}.key_chars", f"must be 0 or between 8 and 200 (got {self.key_chars})")
        self.reasoning.check(f"{key}.reasoning", where)
        self.tool_call.check(f"{key}.tool_call", where)
        self.tool_output.check(f"{key}.tool_output", where)
        # Turns until stale are drawn from a geometric distribution with this mean: at least one turn.
        at_least(self.reasoning_stale_after, 1, f"{key}.reasoning_stale_after", where, "turns")
        at_least(self.output_stale_after, 1, f"{key}.output_stale_after", where, "turns")
        if not 0 <= self.tool_output_early <= 100:  # also refuses NaN
            raise UserError(where, f"{key}.tool_output_early",
                            f"must be between 0 and 100 (got {self.tool_output_early})")
        if not 0 < self.tool_output_early_turns < 1e6:
            raise UserError(where, f"{key}.tool_output_early_turns",
                            f"must be above 0 turns (got {self.tool_output_early_turns})")
        for i, span in enumerate(self.initial):
            span.check(f"{key}.initial[{i}]", where)
        for i, event in enumerate(self.events):
            event.check(f"{key}.events[{i}]", where)


@dataclass
class Latency:
    """Simulated seconds: a model call costs base + per input token + per output token."""

    model_base_s: float = 0.4
    model_per_input_token_s: float = 0.00002
    model_per_output_token_s: float = 0.015
    tool_mean_s: float = 1.5
    tool_sigma: float = 0.6

    def check(self, key: str, where: str) -> None:
        for f in dataclasses.fields(self):
            non_negative(getattr(self, f.name), f"{key}.{f.name}", where)


@dataclass
class Decision:
    """Cost and quality of a model-driven prune pass (see ``policies/decision.py``)."""

    index_base: float = 100.0
    index_per_candidate: float = 8.0
    rationale_base: float = 40.0
    rationale_per_span: float = 120.0
    rationale_sigma: float = 0.2
    select_mean: float = 3.0
    select_max: int = 5
    reclaim_target: float = 0.0
    selection_quality: float = 0.9
    protect_recent_turns: int = 2
    concurrent: bool = False
    # Reentrant self-edit: the pass writes its rationale into the window before applying
    # its plan, and the rationale is itself a candidate of that plan (the editor may
    # prune its own justification). Only policies that keep the rationale in the window
    # can do this.
    reentrant: bool = False

    def check(self, key: str, where: str) -> None:
        for f in dataclasses.fields(self):
            if f.type != "bool":
                non_negative(getattr(self, f.name), f"{key}.{f.name}", where)
        positive(self.select_max, f"{key}.select_max", where)
        if not 1 <= self.select_mean <= self.select_max:
            raise UserError(where, f"{key}.select_mean", f"{self.select_mean} is not within [1, select_max]")
        fraction(self.selection_quality, f"{key}.selection_quality", where)
        if self.rationale_sigma > MAX_RATIONALE_SIGMA:
            raise UserError(where, f"{key}.rationale_sigma", f"must be from 0 to {MAX_RATIONALE_SIGMA:g} "
                            f"(got {self.rationale_sigma:g}): a wider lognormal spread overflows")


@dataclass
class NeedParams:
    """How often the agent needs content it saw before (see ``sim/needs.py``). All zero: never."""

    relevant: float = 0.0  # per turn, chance that a key whose content is still relevant comes to mind
    stale: float = 0.0  # per turn, chance that a key whose content is stale is truly needed
    misjudge: float = 0.0  # chance that stale content that comes to mind is taken for relevant
    horizon: int = 1000  # keys first seen more than this many turns ago never come to mind
    focus: float = 0.0  # per turn, chance that a key whose output is tagged `focus_tag` comes to mind
    focus_tag: str = "focus"  # the tag marking the object of the investigation (e.g. the pod being debugged)

    @property
    def enabled(self) -> bool:
        return self.relevant > 0 or self.stale > 0 or self.focus > 0

    def check(self, key: str, where: str) -> None:
        fraction(self.relevant, f"{key}.relevant", where)
        fraction(self.stale, f"{key}.stale", where)
        fraction(self.misjudge, f"{key}.misjudge", where)
        positive(self.horizon, f"{key}.horizon", where)
        fraction(self.focus, f"{key}.focus", where)
        if self.stale > max(self.relevant, self.focus):
            raise UserError(where, f"{key}.stale", f"{self.stale} is above both relevant and focus")


DIGEST_KINDS = ("keys", "groups")


@dataclass
class TombstoneParams:
    """The marker an evicted span leaves under a provenance-keeping policy."""

    tokens: int = 24  # size of one tombstone in the window
    # Tokens the tombstones may hold in the window (0: no limit, they stay until the run ends). Past it the
    # oldest fold into one pinned digest (sim/model/digest.py) until they hold half the budget.
    budget: int = 0
    digest_base: int = 16  # tokens of the digest's fixed part: its header and the pointer to the edit log
    # Most tokens the digest may hold (0: no limit); past it the keys named longest ago are only counted
    # ("keys"), or its groups coarsen ("groups").
    digest_max: int = 0
    # "keys": name every folded key (sim/model/digest.py); "groups": name keys and prefix groups within
    # digest_root * sqrt(keyed tombstones folded) tokens, covering every folded key and some that share
    # a group's prefix (sim/model/grouped_digest.py).
    digest: str = "keys"
    digest_root: int = 128  # "groups": tokens above digest_base per square root of the keyed tombstones folded

    def check(self, key: str, where: str) -> None:
        positive(self.tokens, f"{key}.tokens", where)
        non_negative(self.budget, f"{key}.budget", where)
        if 0 < self.budget < self.tokens:
            raise UserError(where, f"{key}.budget", f"{self.budget} is below one tombstone ({self.tokens} tokens)")
        non_negative(self.digest_base, f"{key}.digest_base", where)
        non_negative(self.digest_max, f"{key}.digest_max", where)
        if self.digest not in DIGEST_KINDS:
            raise UserError(where, f"{key}.digest", f"{self.digest!r} is not one of {', '.join(DIGEST_KINDS)}")
        positive(self.digest_root, f"{key}.digest_root", where)
        if 0 < self.digest_max <= self.digest_base:
            raise UserError(where, f"{key}.digest_max", f"{self.digest_max} leaves no room above digest_base "
                            f"({self.digest_base})")


CACHE_BEHAVIOURS = ("explicit", "implicit", "none")
TTLS = {"5m": 300.0, "1h": 3600.0}  # the two cache lifetimes explicit caching sells, in simulated seconds
_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(s|m|h)$")


def duration_s(text: str) -> float | None:
    """``"300s"``, ``"5m"`` or ``"1h"`` in seconds; None when the text is not a positive duration."""
    match = _DURATION.match(text) if isinstance(text, str) else None
    if match is None:
        return None
    value = float(match.group(1)) * {"s": 1.0, "m": 60.0, "h": 3600.0}[match.group(2)]
    return value if value > 0 else None


@dataclass
class Pricing:
    """What model calls cost, and how the provider caches prompts (see docs/cost.md).

    ``model`` names an entry of the shipped ``prices.toml``; a scenario file's
    ``[pricing]`` table fills every key it leaves out from that entry (the io
    layer does this), so the values here are always concrete. The defaults are
    the ``claude-opus-4-5`` entry (a test keeps them equal); in code, build one
    for another model with ``prunesim.io.prices.pricing(model)``, since
    ``Pricing(model=...)`` alone keeps the default's prices. Prices are USD per
    million tokens. ``cache``: ``explicit`` (breakpoints placed by the runtime,
    writes billed at a premium: Anthropic), ``implicit`` (the provider caches
    prefixes on its own, writes billed as input: OpenAI, Gemini) or ``none``.
    """

    model: str = "claude-opus-4-5"
    provider: str = "anthropic"
    cache: Literal["explicit", "implicit", "none"] = "explicit"
    ttl: str = "5m"  # how long an unused entry lives: "5m" or "1h" (explicit), any "Ns"/"Nm"/"Nh" (implicit)
    input: float = 5.0
    output: float = 25.0
    cache_read: float = 0.5
    cache_write_5m: float = 6.25
    cache_write_1h: float = 10.0
    min_tokens: int = 4096  # shortest prefix the provider caches
    granularity: int = 1  # cached prefixes are whole multiples of this many tokens
    breakpoints: int = 4  # explicit caching: marks one request may carry
    lookback: int = 20  # explicit caching: spans a mark searches back for an entry (0: no limit)
    reuse: float = 1.0  # share of the readable prefix a call is billed as read, in expectation (fitted)

    @property
    def ttl_s(self) -> float:
        return duration_s(self.ttl)

    @property
    def cache_write(self) -> float:
        """USD per million tokens written to the cache at this TTL (the input price when writes carry no premium)."""
        if self.cache != "explicit":
            return self.input
        return self.cache_write_5m if self.ttl == "5m" else self.cache_write_1h

    def check(self, key: str, where: str) -> None:
        if duration_s(self.ttl) is None:
            raise UserError(where, f"{key}.ttl", f"must be a duration such as 5m, 1h or 600s (got {self.ttl!r})")
        if self.cache == "explicit" and self.ttl not in TTLS:
            raise UserError(where, f"{key}.ttl", f"explicit caches are sold for {' or '.join(TTLS)} (got {self.ttl!r})")
        for name in ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h", "min_tokens"):
            non_negative(getattr(self, name), f"{key}.{name}", where)
        positive(self.granularity, f"{key}.granularity", where)
        positive(self.breakpoints, f"{key}.breakpoints", where)
        non_negative(self.lookback, f"{key}.lookback", where)
        fraction(self.reuse, f"{key}.reuse", where)


@dataclass
class ReplayParams:
    """``[replay]``: how a replay of a recorded run sets the runtime around it (read by transcript replays only).

    With ``recorded`` the run's own runtime: the recorded model names the
    ``[pricing]`` entry (prices, cache semantics, TTL, minimum length), the
    window is the one the runtime recorded, else the model's documented one
    (``prices.toml``), the budget is that window, and the trigger of
    prunesim's own policies is ``trigger_of_budget`` of the budget. A key listed in
    ``pinned`` (``window``, ``budget``, ``trigger``, ``pricing.KEY`` or all of
    ``pricing``) keeps the scenario's own value: the user set it. The loader
    lists there what ``--set``, ``--grid``, a user's ``[pricing]`` or a file
    extending another sets (:mod:`prunesim.io.settings`). With ``clock = "recorded"`` model calls
    come at their recorded times where the format records them; with
    ``cache_breaks`` the runtime's recorded cache breaks (a call that read
    less from an explicit cache than it held) are replayed. ``sizes``: the
    parts' ``anchored`` sizes, which reproduce the recorded prompt counts, with
    the recorded output counts billed, or the ``calibrated`` size model's
    alone (docs/transcripts.md).
    """

    recorded: bool = False  # the shipped transcript scenarios set it; a synthetic scenario is replayed as given
    trigger_of_budget: float = 0.75
    clock: Literal["recorded", "latency"] = "recorded"
    cache_breaks: bool = True
    sizes: Literal["anchored", "calibrated"] = "anchored"
    pinned: list[str] = field(default_factory=list)

    def check(self, key: str, where: str) -> None:
        fraction(self.trigger_of_budget, f"{key}.trigger_of_budget", where)
        priced = {f"pricing.{f.name}" for f in dataclasses.fields(Pricing)}
        for name in self.pinned:
            if name not in PINNABLE and name not in priced:
                raise UserError(where, f"{key}.pinned", f"unknown key {name!r} (known: {', '.join(PINNABLE)}, "
                                "or pricing.KEY for one key of [pricing])")


# What a replay of a recording sets unless pinned; ``pricing`` pins every key of [pricing], ``pricing.KEY`` one.
PINNABLE = ("window", "budget", "trigger", "pricing")


@dataclass
class Scenario:
    """One experiment: the window, the workload and the parameters of every policy."""

    name: str = "scenario"
    description: str = ""
    turns: int = 40
    window: int = 32_000
    budget: int = 24_000
    budget_kind: Literal["hard", "soft"] = "hard"
    trigger: int = field(default=22_000, metadata=searched(0.3, 0.95, integer=True, per_window=True))
    seed: int = 0
    policy: str = "naive"
    workload: Workload = field(default_factory=Workload)
    latency: Latency = field(default_factory=Latency)
    decision: Decision = field(default_factory=Decision)
    need: NeedParams = field(default_factory=NeedParams)
    tombstone: TombstoneParams = field(default_factory=TombstoneParams)
    replay: ReplayParams = field(default_factory=ReplayParams)
    reaction: ReactionParams = field(default_factory=ReactionParams)
    agent: AgentParams = field(default_factory=AgentParams)
    pricing: Pricing = field(default_factory=Pricing)
    # The parameter tables policies declare (``Policy.tables``), by table name, filled by the
    # loader with every registered table. Each is also an attribute: ``scenario.gate``.
    tables: dict[str, Any] = field(default_factory=dict, repr=False)

    def __getattr__(self, name: str) -> Any:
        tables = self.__dict__.get("tables")
        if tables is not None and name in tables:
            return tables[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def hard(self) -> bool:
        return self.budget_kind == "hard"

    def check(self, where: str) -> None:
        positive(self.turns, "turns", where)
        positive(self.window, "window", where)
        positive(self.budget, "budget", where)
        non_negative(self.trigger, "trigger", where)
        if problem := seed_problem(self.seed):
            raise UserError(where, "seed", problem)
        if self.budget > self.window:
            raise UserError(where, "budget", f"{self.budget} is above the window size {self.window}")
        if self.trigger > self.budget:
            raise UserError(where, "trigger", f"{self.trigger} is above the budget {self.budget}")
        self.workload.check("workload", where)
        self.latency.check("latency", where)
        self.decision.check("decision", where)
        self.need.check("need", where)
        self.tombstone.check("tombstone", where)
        self.replay.check("replay", where)
        self.reaction.check("reaction", where)
        self.agent.check("agent", where)
        self.pricing.check("pricing", where)
        for i, ev in enumerate(self.workload.events):
            if ev.turn > self.turns:
                raise UserError(where, f"workload.events[{i}].turn", f"{ev.turn} is after the last turn {self.turns}")

    def to_dict(self, full: bool = False) -> dict[str, Any]:
        """Plain data, as a scenario file would hold it: policy tables are top-level tables.

        An ``[agent]`` table left as it is by default is left out, so that a scenario without an agent model
        is written (scenario.json, a sweep's run ids) as it was before agent models existed; its unset keys
        (``None``: the profile's value) are left out too. ``full``: every key of every table, as the defaults
        table lists them."""
        out = dataclasses.asdict(self)
        out.update(out.pop("tables"))
        if full:
            return out
        if self.agent.is_default():
            del out["agent"]
        else:
            out["agent"] = {k: v for k, v in out["agent"].items() if v is not None}
        return out


# -- value checks (policies use them for their own tables) --------------------
# One rule for a seed wherever it is given (a flag, --set, a scenario file, a range of seeds, the API): an
# integer from 0 to MAX_SEED. numpy takes any integer, but a seed of hundreds of digits is a typo that every
# result file (summary.json, runs.csv) and every reader of them would then have to carry.
MAX_SEED = 10**12


def seed_problem(value) -> str | None:
    """Why ``value`` cannot be a seed, or None when it can (numpy's integers can)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        return f"must be an integer from 0 to {MAX_SEED:,} (got {value!r})"
    value = int(value)
    if not 0 <= value <= MAX_SEED:
        shown = f"{value}" if len(str(value)) <= 24 else f"a number of {len(str(abs(value)))} digits"
        return f"{shown} is out of range (a seed is an integer from 0 to {MAX_SEED:,})"
    return None


def non_negative(value, key: str, where: str) -> None:
    if value < 0:
        raise UserError(where, key, f"must not be negative (got {value})")


def positive(value, key: str, where: str) -> None:
    if value <= 0:
        raise UserError(where, key, f"must be positive (got {value})")


def at_least(value, low, key: str, where: str, unit: str) -> None:
    if value < low:
        raise UserError(where, key, f"must be at least {low} ({unit}); got {value}")


def fraction(value, key: str, where: str) -> None:
    if not 0 <= value <= 1:
        raise UserError(where, key, f"must be between 0 and 1 (got {value})")


def span_kind(value: str, key: str, where: str) -> None:
    if value not in KINDS:
        raise UserError(where, key, f"unknown span kind {value!r} (known: {', '.join(KINDS)})")
