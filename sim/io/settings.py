"""One place that resolves what a run runs on, and where each value came from.

Every value of a run (the model and its prices, the cache, the window, budget
and trigger, the clock, the calibration, the summary size, the reaction, the
policies' settings) is resolved here once, from four sources, the first that
gives a value winning:

1. ``user``: what the user set: ``--set`` (or the API's ``overrides``), a
   ``--grid`` point, a scenario file of their own (a file extending another
   sets what it names), a key a file lists in ``[replay] pinned``, a price file
   (``--prices``);
2. ``recorded``: what the replayed transcript records: its model, its window,
   its turns, its clock;
3. ``fitted``: what prunesim fitted on data, each from its file: the replayed
   agent's re-fetch probability (``reaction.json``), an implicit cache's
   ``reuse`` (``prices.toml``, fitted by ``prunesim fidelity``), the token
   calibration;
4. ``default``: the shipped scenario's values and prunesim's own; a model's
   prices from genai-prices or the shipped table, its cache from the shipped
   table.

A user's value changes that value only: setting a price key keeps the
recorded model and its other prices, and a budget or trigger not set follows
the window (a replay's budget is its window; prunesim's own policies trigger at
``[replay] trigger_of_budget`` of it). Each value keeps its :class:`Setting`
(value, source, where: the file and key, the flag, the transcript field, the
fit file and its digest); :class:`Settings` holds them all beside the scenario
built from them. ``prunesim defaults --explain KEY`` prints one value's chain.
Run ids hash the resolved scenario only, never these sources.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from prunesim.errors import UserError
from prunesim.io import inputs, prices
from prunesim.io import scenario_files as files
from prunesim.model.scenario import Scenario

SOURCES = ("user", "recorded", "fitted", "default")  # highest precedence first
PROVENANCE_FORMAT = 1  # settings.json's format
SETTINGS_FILE = "settings.json"
# The values that say which runtime a run stands for: an output lists those its transcript did not record.
RUNTIME_KEYS = ("pricing.model", "pricing.input", "pricing.output", "pricing.cache_read", "pricing.cache_write_5m",
                "pricing.cache_write_1h", "pricing.cache", "pricing.ttl", "pricing.reuse", "window", "budget",
                "trigger", "clock", "calibration", "reaction.probability", "summary.mean_tokens")
PRUNESIM_DEFAULT = "prunesim's default"
_ORIGIN = "_origin"  # the scenario attribute that keeps where its values came from (not a field: never hashed)


@dataclass(frozen=True)
class Setting:
    """One value and where it came from: ``source`` is one of :data:`SOURCES`, ``where`` names the file and key,
    the flag, the transcript field, or the fit file with its digest."""

    value: Any
    source: str
    where: str

    def as_dict(self) -> dict:
        return {"value": self.value, "source": self.source, "where": self.where}


@dataclass(frozen=True)
class Origin:
    """Where a scenario's values came from: each dotted key's candidates, the winner first, and the user's price
    file (its table and path) that a replay reads when the recording names another model."""

    chains: Mapping[str, tuple[Setting, ...]]
    price_file: tuple[dict, str] | None = None


@dataclass(frozen=True)
class Settings:
    """A resolved scenario and, per dotted key, the chain of values that were offered for it (winner first)."""

    scenario: Scenario
    chains: Mapping[str, tuple[Setting, ...]]
    price_file: tuple[dict, str] | None = None

    def __getitem__(self, key: str) -> Setting:
        return self.chains[key][0]

    def __contains__(self, key: str) -> bool:
        return key in self.chains

    @property
    def origin(self) -> dict[str, Setting]:
        """Each key's value as resolved, with its source and where."""
        return {key: chain[0] for key, chain in self.chains.items()}

    def chain(self, key: str) -> tuple[Setting, ...]:
        """Every value offered for ``key``, the one used first (a :class:`UserError` for an unknown key)."""
        if not key.strip():
            raise UserError("--explain", None, "an empty key (prunesim defaults lists every key)")
        if key not in self.chains:
            near = [k for k in self.chains if _near(k, key)][:8]
            raise UserError("--explain", key, "unknown key" + (f" (did you mean {', '.join(near)}?)" if near else
                                                               " (prunesim defaults lists every key)"))
        return self.chains[key]

    def not_recorded(self) -> dict[str, Setting]:
        """The runtime's values (:data:`RUNTIME_KEYS`) that no recording gave: what the output must say it assumed."""
        return {k: self.chains[k][0] for k in RUNTIME_KEYS if k in self.chains and self.chains[k][0].source
                != "recorded"}

    def price_table(self) -> str:
        """Where the run's prices were read: the sources of its price keys, in one phrase."""
        wheres = [self.chains[f"pricing.{k}"][0] for k in ("input", "output", "cache_read")
                  if f"pricing.{k}" in self.chains]
        return "; ".join(dict.fromkeys(_table_of(s) for s in wheres))

    def runtime(self) -> dict:
        """What an output names: the model, the price table, the window, and the values that were not recorded."""
        s = self.scenario
        return {"model": s.pricing.model, "price_table": self.price_table(), "window": s.window,
                "acting_window": s.budget, "trigger": s.trigger, "cache": s.pricing.cache,
                "input": s.pricing.input, "output": s.pricing.output,
                "not_recorded": sorted(self.not_recorded())}

    def to_json(self) -> dict:
        """settings.json: the runtime, then every value with its source and where (keys sorted)."""
        return {"format": PROVENANCE_FORMAT, "runtime": self.runtime(),
                "values": {k: self.chains[k][0].as_dict() for k in sorted(self.chains)}}

    def with_agent(self, scaffold: str = "") -> Settings:
        """These settings and the agent model's for a run on a workload ``scaffold`` recorded ('' for a synthetic
        one): ``agent.profile`` as it resolves, and each parameter of the profile the run takes, with the profile's
        source (docs/agent.md, "The profiles"); without a profile, each is off. A value the user set keeps its chain."""
        chains = dict(self.chains)
        for key, offered in agent_offers(self.scenario, scaffold).items():
            chains.setdefault(key, (offered,))
        return Settings(self.scenario, chains, self.price_file)

    def explain(self, key: str) -> list[str]:
        """``key``'s chain as lines: the value used, then the ones it won over."""
        lines = []
        for i, s in enumerate(self.chain(key)):
            lines.append(f"{'used' if i == 0 else 'over':4s}  {_show(s.value):24s}  {s.source:8s}  {s.where}")
        return lines


def _near(known: str, asked: str) -> bool:
    """Whether ``known`` is what ``asked`` may have meant: the same key in other case, its last part
    (``cap``), the keys under a table (``agent`` or ``agent.``), or a key that ``asked`` goes past
    (``agent.profile.x``: a value has no keys under it)."""
    folded = asked.casefold().rstrip(".")
    return bool(folded) and (known.casefold() == folded or known.endswith("." + asked)
                             or known.startswith(folded + ".") or folded.startswith(known.casefold() + "."))


def agent_offers(scenario: Scenario, scaffold: str) -> dict[str, Setting]:
    """What the agent model offers for ``agent.profile`` and for each parameter of the profile a run takes."""
    from prunesim.model import agent_profiles as ap

    name = ap.profile_name(scenario.agent, scaffold)
    how = (f"auto: the profile of the scaffold that recorded the workload ({scaffold})" if scaffold
           else "auto: a synthetic workload has no agent model") if scenario.agent.profile == ap.AUTO else "named"
    out = {"agent.profile": Setting(name, "default", how)}
    profile = ap.resolve(scenario.agent, scaffold)
    if profile is None:
        off = Setting(None, "default", f"off: no agent model runs (agent.profile {name})")
        return out | {f"agent.{param}": off for param in ap.PARAMETERS}
    why = ap.reasons(profile)
    for param in ap.PARAMETERS:
        told = profile.sources[param]
        source = "user" if told == "user" else "fitted" if "fitted" in told else "default"
        out[f"agent.{param}"] = Setting(profile.values[param], source,
                                        f"profile {name}: {told}" + (f"; {why[param]}" if why[param] else ""))
    return out


def _table_of(setting: Setting) -> str:
    where = setting.where.removeprefix("= input (")
    if where.startswith(prices.LIBRARY):
        return where.split(":", 1)[0]
    if where.startswith(prices.shipped_path().name):
        return f"{prices.shipped_path().name} ({_shipped_digest()})"
    return where.split(":", 1)[0] if setting.source == "user" else where


@functools.cache
def _shipped_digest() -> str:
    return prices.digest(prices.shipped_path())


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    return str(value)


# -- the sources ------------------------------------------------------------------------
flatten = files.flatten  # dotted keys of nested tables (a list is one value)


def _prunesim_defaults() -> dict[str, Setting]:
    return {k: Setting(v, "default", PRUNESIM_DEFAULT) for k, v in files.flat_defaults().items()}


def _fitted() -> dict[str, Setting]:
    """What prunesim fitted and ships, each with its file's digest."""
    from prunesim.model import reaction

    path = Path(str(resources.files("prunesim.model").joinpath(reaction.FIT_FILE)))
    fit = reaction.shipped_fit()
    where = (f"{reaction.FIT_FILE} (sha256 {prices.digest(path)}): probability, fitted on "
             f"{fit.get('fitted_on', 'the shipped sessions')}")
    from prunesim.policies.summary import SummaryParams

    summary = ("policies/summary.py: the mean size of the three compaction summaries in claude-code-dev (2,429, "
               "2,522 and 3,357 tokens), rounded; three summaries, no interval")
    return {"reaction.probability": Setting(reaction.FITTED_PROBABILITY, "fitted", where),
            "summary.mean_tokens": Setting(SummaryParams().mean_tokens, "fitted", summary)}


def _file_layer(links: list[tuple[Path, dict]], pinned: list[str]) -> dict[str, list[Setting]]:
    """Each file of an ``extends`` chain: a shipped file's values are defaults, a user's own file's are the user's;
    a file extending another sets what it names; ``[replay] pinned`` keys are the user's. On a replay of a
    recording, a base file's window, budget and trigger are placeholders (scenarios.md): defaults."""
    shipped = {p.resolve() for p in files.shipped_scenarios().values()}
    out: dict[str, list[Setting]] = {}
    for i, (path, own) in enumerate(links):
        mine = path.resolve() not in shipped
        replayed = isinstance(own.get("replay"), dict) and own["replay"].get("recorded") is True
        for key, value in flatten({k: v for k, v in own.items() if k not in ("extends",)}).items():
            placeholder = i == 0 and replayed and key in ("window", "budget", "trigger")
            meant = _is_pinned(key, pinned) or (mine and not placeholder) or (i > 0 and not placeholder)
            name = f"shipped scenario {path.stem}" if not mine else inputs.text_name(str(path))
            label = f"{name}: {key}" + (" ([replay] pinned)" if _is_pinned(key, pinned) and not mine else "")
            out.setdefault(key, []).insert(0, Setting(value, "user" if meant else "default", label))
    return out


def _is_pinned(key: str, pinned: list[str]) -> bool:
    return key in pinned or (key.startswith("pricing.") and "pricing" in pinned)


def _override_layer(overrides: Mapping | None, given_as: str) -> dict[str, Setting]:
    out = {}
    for key, value in (overrides or {}).items():
        if isinstance(value, Mapping):  # --set pricing={model = "x"}: each key it holds
            for sub, v in flatten(value, key + ".").items():
                out[sub] = Setting(v, "user", f"{given_as} {key}")
        else:
            out[key] = Setting(value, "user", f"{given_as} {key}")
    return out


def _pricing_layer(model: str, price_file: tuple[dict, str] | None) -> dict[str, Setting]:
    found = prices.entry(model, *(price_file or ()))
    return {f"pricing.{k}": Setting(v.value, v.source, v.where) for k, v in found.items()
            if k in prices.PRICED_KEYS}


def _chains(scenario: Scenario, layers: list[dict[str, Setting | list[Setting]]],
            derived: Mapping[str, str] | None = None) -> dict[str, tuple[Setting, ...]]:
    """Per key of the scenario, the values offered (by precedence, then in the order the layers were given) with
    the scenario's own value first: when no layer offered it, it was derived (``derived`` says from what)."""
    actual = flatten(scenario.to_dict())
    rank = {s: i for i, s in enumerate(SOURCES)}
    chains = {}
    for key, value in actual.items():
        if key in ("name", "description"):
            continue
        offered: list[Setting] = []
        for layer in reversed(layers):  # within one source, a later layer's value is offered first
            got = layer.get(key)
            if got is not None:
                offered.extend(got if isinstance(got, list) else [got])
        offered.sort(key=lambda s: rank[s.source])  # stable
        if not offered or not _same(offered[0].value, value):
            top = offered[0].source if offered else "default"
            why = (derived or {}).get(key, "as the scenario was given")
            offered.insert(0, Setting(value, top, f"derived: {why}"))
        else:  # the value as the scenario holds it (an integer given for a price is a float there)
            offered[0] = dataclasses.replace(offered[0], value=value)
        chains[key] = tuple(offered)
    return chains


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return a == b


def _attach(scenario: Scenario, origin: Origin) -> Scenario:
    scenario.__dict__[_ORIGIN] = origin
    return scenario


def of(scenario: Scenario) -> Settings:
    """The settings a scenario was resolved with; for one built in code, its own values (pinned keys the user's)."""
    origin = scenario.__dict__.get(_ORIGIN)
    if origin is None:
        pinned = list(scenario.replay.pinned)
        given = {k: Setting(v, "user" if _is_pinned(k, pinned) else "default", "the scenario as given")
                 for k, v in flatten(scenario.to_dict()).items()}
        layers = [_prunesim_defaults(), _fitted(), given, _pricing_layer(scenario.pricing.model, None)]
        origin = Origin(_chains(scenario, layers))
        _attach(scenario, origin)
    return Settings(scenario, origin.chains, origin.price_file)


# -- resolving a scenario ------------------------------------------------------------------
def load(name_or_path: str, overrides: Mapping[str, Any] | None = None, policy=None, given_as: str = "--set",
         price_path: str | Path | None = None) -> Settings:
    """A scenario file (a shipped name or a path) with the user's overrides and price file, resolved.

    ``policy``: as :func:`prunesim.io.scenario_files.from_dict` takes it; ``given_as``: what errors call the
    overrides (``--set``, or the API's ``overrides``)."""
    path = files.resolve_path(name_or_path)
    links: list[tuple[Path, dict]] = []
    data = files.read_scenario(path, trail=links)
    data.setdefault("name", inputs.text_name(path.stem))
    price_file = _read_price_file(price_path)
    if path.resolve() not in {p.resolve() for p in files.shipped_scenarios().values()} \
            and isinstance(data.get("pricing"), dict):
        data = files.absolute_sizes_win(data, {"pricing": data["pricing"]})  # a user's [pricing] is meant
    if overrides:
        data = files.absolute_sizes_win(files.apply_overrides(data, dict(overrides), given_as), overrides)
        where = f"{path} (with {given_as})"
    else:
        where = str(path)
    scenario = files.from_dict(data, where, policy, price_file)
    pinned = list(scenario.replay.pinned)
    layers = [_prunesim_defaults(), _fitted(), _pricing_layer(scenario.pricing.model, price_file),
              _file_layer(links, pinned), _override_layer(overrides, given_as)]
    _attach(scenario, Origin(_chains(scenario, layers, _BASE_DERIVED), price_file))
    return of(scenario)


_BASE_DERIVED = {"budget": "follows the window that was set", "window": "makes room for the budget and trigger set",
                 "trigger": "kept within the budget", "replay.pinned": "lists the runtime's keys the user set"}


def _read_price_file(path: str | Path | None) -> tuple[dict, str] | None:
    if path is None:
        return None
    problem = inputs.problem(Path(path), "price file")
    if problem:
        raise UserError(str(path), None, problem)
    return prices.read_user_table(Path(path)), f"{path} (sha256 {prices.digest(Path(path))})"


def with_overrides(scenario: Scenario, overrides: Mapping[str, Any], *, pin: bool = True, policy=None,
                   given_as: str = "overrides") -> Scenario:
    """``scenario`` with dotted-key overrides, validated; what it sets is the user's (``pin``: and listed in
    ``[replay] pinned``, as ``--set`` does)."""
    base = of(scenario)
    new = _rebuild(scenario, overrides, pin, policy, given_as)
    layers = [{k: list(c) for k, c in base.chains.items()}, _pricing_layer(new.pricing.model, base.price_file),
              _override_layer(overrides, given_as)]
    return _attach(new, Origin(_chains(new, layers, _BASE_DERIVED), base.price_file))


def _rebuild(scenario: Scenario, overrides: Mapping[str, Any], pin: bool, policy, given_as: str) -> Scenario:
    data = files.apply_overrides(scenario.to_dict(), dict(overrides), given_as)
    if pin:
        data = files.absolute_sizes_win(data, overrides)
    return files.from_dict(data, f"{scenario.name} (with {given_as})", policy, of(scenario).price_file)


def known_pinned(scenario: Scenario, key: str) -> bool:
    """Whether the user set a runtime key (``[replay] pinned``: a whole ``pricing`` pins each of its keys)."""
    return _is_pinned(key, list(scenario.replay.pinned))


def list_prices(scenario: Scenario) -> dict[str, float]:
    """The model's own prices (USD per million tokens), whatever the user set over them: what a recorded bill is
    priced at when the transcript records tokens, not dollars (a bill at the user's prices is not the recorded
    one). A user's price file counts: for a model no other source prices, it is the list."""
    found = prices.entry(scenario.pricing.model, *(of(scenario).price_file or ()))
    return {k: float(found[k].value) if k in found else getattr(scenario.pricing, k) for k in prices.PRICE_KEYS}


# -- what a recording sets ------------------------------------------------------------------
def transcript_where(data) -> str:
    """The file the user named (a problem of the recorded runtime is one of that file), then the run in it."""
    if data.path:
        return f"{data.path} ({data.name})"
    source = data.header.get("source") or ""
    return data.name if not source or source == data.name else f"{source} ({data.name})"


def recorded_model(data) -> tuple[str, bool]:
    """The price tables' name of the model that ran the workload, and whether the file named it ('' unknown)."""
    raw = data.header.get("model") or ""
    if raw:
        return prices.known_name(raw), True
    return prices.ASSUMED_MODELS.get(data.header.get("format", ""), ""), False


def recorded_layer(base: Scenario, data, given_as: str = "--set") -> dict[str, Setting]:
    """What the recording sets under ``base``, each with its source: the model, the window (the documented one of
    the model that ran it where the file records none), the budget and trigger that follow it, the turns.

    Only values that differ from ``base`` and that the user did not set are given. Raises :class:`UserError` for
    a model no price source covers (naming every key it lacks) and for a recorded window smaller than a prompt
    the run really sent."""
    file = transcript_where(data)  # errors name the file; a value's where names the field (shared by transcripts)
    out: dict[str, Setting] = {}
    if base.turns != data.turns:
        out["turns"] = Setting(data.turns, "recorded", "the transcript: its turns")
    rp = base.replay
    if not rp.recorded:
        return out
    price_file = of(base).price_file
    model, named = recorded_model(data)
    if model and not known_pinned(base, "pricing.model"):
        needed = [k for k in prices.missing(prices.entry(model, *(price_file or ())))
                  if not known_pinned(base, f"pricing.{k}")]
        if needed:
            raise UserError(file, "model", f"the recorded model {data.header.get('model')!r}: "
                            + prices.unknown_model_problem(model, needed, price_file[0] if price_file else None)
                            .replace("--set", given_as))
        if base.pricing.model != model:
            out["pricing.model"] = Setting(model, "recorded" if named else "default",
                                           f"the transcript: model {data.header.get('model')!r}" if named else
                                           f"{data.header.get('format')} records no model; {model} is the model it "
                                           "runs by default")
    window = _recorded_window(data, file)
    source = Setting(window, "recorded", "the transcript: context_window")
    if window is None:  # the documented window of the model that ran it, else of the model it is billed as
        documented = prices.entry(model if model else base.pricing.model, *(price_file or ())).get("window")
        if documented is None:
            documented = prices.entry(base.pricing.model, *(price_file or ())).get("window")
        if documented is not None:
            window = int(documented.value)
            source = Setting(window, "default", f"{documented.where} (the model's documented window: the "
                             "transcript records none)")
    if not known_pinned(base, "window") and window is not None and window != base.window:
        out["window"] = source
    window_now = out["window"].value if "window" in out else base.window
    window_from = out.get("window", Setting(base.window, "user", "window"))
    if not known_pinned(base, "budget") and window_now != base.budget:
        out["budget"] = Setting(window_now, window_from.source, f"= window ({window_from.where})")
    budget = base.budget if known_pinned(base, "budget") else window_now
    if not known_pinned(base, "trigger"):
        trigger = round(rp.trigger_of_budget * budget)
        if trigger != base.trigger:
            out["trigger"] = Setting(trigger, "default", f"= replay.trigger_of_budget {rp.trigger_of_budget:g} x "
                                     f"budget {budget:,}")
    return out


def _recorded_window(data, where: str) -> int | None:
    window = data.header.get("context_window")
    if window is None:
        return None
    prompts = [p for p in data.header.get("prompt_tokens") or [] if isinstance(p, int)]
    if prompts and max(prompts) > window:
        k = prompts.index(max(prompts)) + 1
        raise UserError(where, "context_window", f"the recorded window of {window:,} tokens is smaller than a "
                        f"prompt the run sent ({max(prompts):,} tokens at call {k}): not a window the runtime "
                        "could have had")
    return window


_RESOLVED: dict[tuple, tuple[Scenario, Scenario]] = {}  # (id(base), what the recording sets) -> (base, scenario)


def for_transcript(base: Scenario, data, given_as: str = "--set") -> Scenario:
    """``base`` on the recorded runtime of ``data`` (:func:`recorded_layer`), with the provenance of every value.

    Built once per base and recorded runtime (transcripts of one model and window share it). Raises
    :class:`UserError` naming the transcript when a value the user set does not fit that runtime."""
    layer = recorded_layer(base, data, given_as)
    confirmed = recorded_as_given(base, data, layer)
    extra = _run_facts(base, data)
    key = (id(base), tuple(sorted(layer.items())), tuple(sorted(confirmed.items())), tuple(sorted(extra.items())))
    hit = _RESOLVED.get(key)
    if hit is not None and hit[0] is base:
        return hit[1]
    scenario = _on_runtime(base, data, layer, extra, given_as, confirmed)
    if len(_RESOLVED) > 256:
        _RESOLVED.clear()
    _RESOLVED[key] = (base, scenario)
    return scenario


def recorded_as_given(base: Scenario, data, layer: dict[str, Setting]) -> dict[str, Setting]:
    """The values the recording names that ``base`` already holds (a Claude Code session of the default model on
    the default window): nothing to change, but their source is the recording, not prunesim's default."""
    if not base.replay.recorded:
        return {}
    out: dict[str, Setting] = {}
    model, named = recorded_model(data)
    if named and "pricing.model" not in layer and not known_pinned(base, "pricing.model") \
            and base.pricing.model == model:
        out["pricing.model"] = Setting(model, "recorded", f"the transcript: model {data.header.get('model')!r}")
    window = data.header.get("context_window")
    if window is not None and "window" not in layer and not known_pinned(base, "window") and window == base.window:
        out["window"] = Setting(window, "recorded", "the transcript: context_window")
    return out


def _on_runtime(base: Scenario, data, layer: dict[str, Setting], extra: dict, given_as: str,
                confirmed: dict[str, Setting] | None = None) -> Scenario:
    if not layer:
        scenario = base if not (extra or confirmed) else _copy(base)
    else:
        changes = {k: s.value for k, s in layer.items()}
        try:
            scenario = _rebuild(base, changes, False, (), "overrides")
        except UserError as err:  # a value set with --set the recorded runtime cannot take
            raise on_recorded_runtime(err, data, changes, given_as) from None
    settings = of(base)
    kept = {k: list(c) for k, c in settings.chains.items()}
    if "pricing.model" in layer:  # the old model's prices were offered for it, not for this one
        kept = {k: [s for s in c if not k.startswith("pricing.") or s.source == "user"
                    or s.where == PRUNESIM_DEFAULT] for k, c in kept.items()}
    layers = [kept, _pricing_layer(scenario.pricing.model, settings.price_file)
              if "pricing.model" in layer else {}, layer, confirmed or {}]
    chains = _chains(scenario, layers, _BASE_DERIVED)
    chains.update(extra)
    return _attach(scenario, Origin(chains, settings.price_file)) if scenario is not base else base


def _copy(base: Scenario) -> Scenario:
    new = dataclasses.replace(base)
    new.tables = base.tables
    return new


def _run_facts(base: Scenario, data) -> dict[str, tuple[Setting, ...]]:
    """Values of the replay that are not scenario keys: the clock it runs on and the calibration that sized it."""
    recorded = base.replay.clock == "recorded" and data.header.get("call_times")
    clock = (Setting("recorded", "recorded", "the transcript: the time of each model call") if recorded else
             Setting("latency model", "default", "[latency]: " + ("the transcript records no time per call"
                                                                  if base.replay.clock == "recorded" else
                                                                  "replay.clock = latency")))
    name = data.header.get("calibration") or "none"
    cal = (Setting(name, "fitted", f"calibrations.json: profile {name}") if name != "none" else
           Setting("none", "default", "no calibration profile for this model"))
    return {"clock": (clock,), "calibration": (cal,)}


def on_recorded_runtime(err: UserError, data, changes: dict, given_as: str) -> UserError:
    """``err``, met on the scenario that puts the recorded runtime under the caller's: named as that file's."""
    recorded = ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in changes.items()
                         if k != "turns")
    if not recorded:
        return UserError(transcript_where(data), err.key, err.problem)
    return UserError(transcript_where(data), err.key, f"{err.problem} on the recorded runtime ({recorded}); "
                     f"set {given_as} window=... too, or a smaller value")
