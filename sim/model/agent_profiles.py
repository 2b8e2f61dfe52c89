"""Agent profiles: each scaffold's turn cap and reaction parameters, with where every value comes from.

A profile names a real scaffold (SWE-agent, OpenHands, mini-swe-agent, Claude
Code, Codex) and gives every parameter of the agent model
(:mod:`prunesim.model.agent`) a value and a *source*:

* ``documented``: the scaffold's own configuration says it (a turn cap);
* ``fitted``: ``sim/model/agent_fit.json`` holds it, fitted on real outcomes by
  ``scripts/fit_agent.py`` (the file carries the digests of its inputs);
* ``provisional``: set by hand from the design's exploration until a fit
  exists; shown as such wherever a profile is printed;
* ``borrowed``: taken from another profile (mini-swe-agent from SWE-agent: same
  family, same benchmark); the source names the lender and the lender's source;
* ``off``: no data supports the mechanism for this scaffold, so it is left out
  rather than tuned (Claude Code and Codex keep the fitted re-fetch of a
  resource, :mod:`prunesim.model.reaction`, and nothing else);
* ``user``: the scenario's ``[agent]`` table or ``--set agent.KEY=...``.

The shipped values and their provenance are one data file,
``sim/model/agent_profiles.json``; a fit file overrides the values it holds.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
from dataclasses import dataclass, field
from importlib import resources as package_files
from typing import Literal

from prunesim.errors import UserError

PROFILES_FILE = "agent_profiles.json"
FIT_FILE = "agent_fit.json"  # written by the outcomes fit (scripts/fit_agent.py), read when present
AUTO, NONE = "auto", "none"
# A transcript's format names its scaffold; formats with no profile (an OpenAI message list) run with none.
SCAFFOLD_OF_FORMAT = {"swe-agent": "swe-agent", "openhands": "openhands", "mini-swe-agent": "mini-swe-agent",
                      "claude-code": "claude-code", "codex": "codex"}
CAP_COUNTS = ("agent", "agent+decisions")
BASES = ("solved", "unsolved")
SOURCES = ("documented", "fitted", "provisional", "borrowed", "off", "user")


@dataclass
class AgentParams:
    """``[agent]``: which agent model reacts to what the policy does, and its parameters.

    ``profile``: ``"auto"`` (the default: a replayed transcript takes its
    scaffold's profile, a synthetic run has no agent model), ``"none"`` (no
    agent model: the run as prunesim ran it before agent models existed) or a
    profile's name (``prunesim agents`` lists them). Every other key is unset
    by default and then takes the profile's value; a value set here wins
    (docs/agent.md lists each key, its range and its evidence).
    """

    profile: str = AUTO
    need_rate: float | None = None  # lambda: mean per-run chance that the item of the last work turn is needed
    need_cv: float | None = None  # spread of the per-run rate across runs (Gamma's coefficient of variation; 0: none)
    need_decay: float | None = None  # tau: work turns over which that chance falls by a factor e with age
    need_horizon: int | None = None  # items older than this many work turns are never needed
    summary_fidelity: float | None = None  # phi: chance that a summary carrying a needed item meets the need
    redo_turns: int | None = None  # turns the agent spends redoing work it has no record of
    resource_reaction: bool | None = None  # re-fetch a transcript's resources before a recorded use (reaction.py)
    cap: int | None = None  # model calls at which the agent stops (0: no cap)
    cap_counts: Literal["agent", "agent+decisions"] | None = None  # which calls the cap counts
    base: Literal["solved", "unsolved"] = "solved"  # the run's outcome without the policy (a replay: solved)
    base_rate: float | None = None  # s: the scaffold's solve rate with the full context
    discordance: float | None = None  # kappa: how often a re-run of the same agent changes the outcome
    cap_success_solved: float | None = None  # chance a run stopped at its cap still solves a task its base solved
    cap_success_unsolved: float | None = None  # ... and a task its base did not
    lengthening_slope: float | None = None  # beta: how success falls with L = log(agent calls / work turns)

    def check(self, key: str, where: str) -> None:
        known = (AUTO, NONE, *shipped_profiles())
        if self.profile not in known:
            raise UserError(where, f"{key}.profile", f"unknown agent profile {self.profile!r} "
                            f"(known: {', '.join(known)})")
        for name, (low, high) in RANGES.items():
            value = getattr(self, name)
            if value is not None and not low <= value <= high:  # (NaN fails both)
                raise UserError(where, f"{key}.{name}", f"must be from {low:g} to {high:g} (got {value})")
        if self.need_decay is not None and self.need_decay <= 0:
            raise UserError(where, f"{key}.need_decay", f"must be above 0 work turns (got {self.need_decay})")
        if self.profile not in (AUTO, NONE):  # a named profile: what it lacks for the mechanisms set is known now
            resolve(self, where=where, key=key)

    def is_default(self) -> bool:
        return self == AgentParams()


# Each numeric key's range: wide enough for any profile a fit could give, narrow enough to refuse a typo.
RANGES = {
    "need_rate": (0.0, 100.0),
    "need_cv": (0.0, 10.0),
    "need_decay": (0.0, 1e6),
    "need_horizon": (1, 1_000_000),
    "summary_fidelity": (0.0, 1.0),
    "redo_turns": (1, 100),
    "cap": (0, 100_000_000),
    "base_rate": (0.0, 1.0),
    "discordance": (0.0, 1.0),
    "cap_success_solved": (0.0, 1.0),
    "cap_success_unsolved": (0.0, 1.0),
    "lengthening_slope": (0.0, 100.0),
}
PARAMETERS = tuple(f.name for f in dataclasses.fields(AgentParams) if f.name not in ("profile", "base"))


@dataclass(frozen=True)
class Profile:
    """A profile resolved for one run: every parameter's value (None: the mechanism is off) and its source."""

    name: str
    scaffold: str
    values: dict = field(hash=False)
    sources: dict = field(hash=False)
    base: str = "solved"

    def __getattr__(self, name: str):
        values = self.__dict__.get("values")
        if values is not None and name in values:
            return values[name]
        raise AttributeError(name)

    @property
    def needs_on(self) -> bool:
        return bool(self.values.get("need_rate"))

    @property
    def success_on(self) -> bool:
        return self.values.get("base_rate") is not None

    def provenance(self) -> dict:
        """Each parameter as ``{"value", "source", "why"}``."""
        why = reasons(self)
        return {name: {"value": self.values[name], "source": self.sources[name], "why": why[name]}
                for name in PARAMETERS}


def _read_json(name: str) -> dict | None:
    entry = package_files.files("prunesim.model").joinpath(name)
    if not entry.is_file():
        return None
    return json.loads(entry.read_text("utf-8"))


_CACHE: dict[str, dict] = {}


def shipped_profiles() -> dict:
    """The shipped profiles (``agent_profiles.json``), by name."""
    if "profiles" not in _CACHE:
        _CACHE["profiles"] = _read_json(PROFILES_FILE)["profiles"]
    return _CACHE["profiles"]


def shipped_fit() -> dict | None:
    """The fit file (``agent_fit.json``) when one is shipped, else None; refused when malformed (a packaging bug)."""
    if "fit" not in _CACHE:
        fit = _read_json(FIT_FILE)
        if fit is not None:
            for name, values in fit.get("profiles", {}).items():
                stray = [k for k in values if k not in PARAMETERS]
                if name not in shipped_profiles() or stray:
                    raise ValueError(f"{FIT_FILE}: profile {name!r} or its keys {stray} are not the agent model's")
        _CACHE["fit"] = fit
    return _CACHE["fit"]


def fit_digest() -> str:
    """A short digest of the fit file's text ('' when none): named in the source of every fitted value."""
    entry = package_files.files("prunesim.model").joinpath(FIT_FILE)
    if not entry.is_file():
        return ""
    return hashlib.sha256(entry.read_bytes()).hexdigest()[:12]


@functools.cache
def _shipped_values(name: str) -> tuple[dict, dict, dict]:
    """:func:`_profile_values`, once per profile and process (every run of a profile resolves the same)."""
    return _profile_values(name)


def reasons(profile: Profile) -> dict:
    """Why each of the profile's values is what it is (the data file's reasons, the fit's notes, "user")."""
    why = dict(_shipped_values(profile.name)[2])
    why.update({p: "set in [agent] or with --set" for p in PARAMETERS if profile.sources[p] == "user"})
    return why


def _profile_values(name: str, seen: tuple[str, ...] = ()) -> tuple[dict, dict, dict]:
    """A shipped profile's values, sources and reasons, the fit file laid over them, a lender's filled in."""
    entry = shipped_profiles()[name]
    values, sources, reasons = {}, {}, {}
    lender = entry.get("borrows")
    if lender and lender not in seen:
        lent, lent_sources, lent_reasons = _profile_values(lender, (*seen, name))
    else:
        lent, lent_sources, lent_reasons = {}, {}, {}
    for param in PARAMETERS:
        spec = entry["params"].get(param) or {"source": "borrowed"}
        if "value" in spec:
            values[param] = spec["value"]
            sources[param] = spec["source"]
            reasons[param] = spec.get("why", "")
        else:  # the lender's value, and where the lender has it from
            values[param] = lent.get(param)
            sources[param] = f"borrowed from {lender} ({lent_sources.get(param, 'off')})"
            reasons[param] = f"{entry.get('why_borrowed', '')} {lender}: {lent_reasons.get(param, '')}".strip()
    fit = shipped_fit() or {}
    for param, value in fit.get("profiles", {}).get(name, {}).items():
        values[param] = value
        sources[param] = f"fitted ({FIT_FILE} {fit_digest()})"
        reasons[param] = fit.get("notes", {}).get(name, "")
    return values, sources, reasons


def profile_name(params: AgentParams, scaffold: str) -> str:
    """The profile a run takes: the one named, else (``auto``) its transcript's scaffold's; ``none`` for none."""
    if params.profile != AUTO:
        return params.profile
    return SCAFFOLD_OF_FORMAT.get(scaffold, NONE)


# What each mechanism needs set once it is on (lookback needs by a need rate, success by a base rate).
REQUIRED = {"need_rate": ("need_cv", "need_decay", "need_horizon", "summary_fidelity", "redo_turns"),
            "base_rate": ("discordance", "cap_success_solved", "cap_success_unsolved", "lengthening_slope")}


def resolve(params: AgentParams, scaffold: str = "", where: str = "[agent]", key: str = "agent") -> Profile | None:
    """The profile of a run whose workload came from ``scaffold`` ('' for a synthetic one); None: no agent model.

    The user's values (set in ``params``) win over the fit file's, which win over the shipped ones. A mechanism
    turned on (a need rate, a base rate) on a profile that has it off must get every value it needs: else a
    :class:`UserError` naming the first missing key.
    """
    name = profile_name(params, scaffold)
    if name == NONE:
        return None
    shipped_values, shipped_sources, _ = _shipped_values(name)
    values, sources = dict(shipped_values), dict(shipped_sources)
    for param in PARAMETERS:
        given = getattr(params, param)
        if given is not None:
            values[param] = given
            sources[param] = "user"
    for switch, needed in REQUIRED.items():
        if values.get(switch) is None or (switch == "need_rate" and not values[switch]):
            continue
        missing = [p for p in needed if values.get(p) is None]
        if missing:
            raise UserError(where, f"{key}.{missing[0]}", f"profile {name!r} has no value for it, which {switch} "
                            f"needs: set {', '.join(missing)} too")
    return Profile(name, shipped_profiles()[name]["scaffold"], values, sources, params.base)


def gamma_quantile(shape: float, u: float) -> float:
    """The ``u`` quantile of a Gamma of this shape and scale 1 (scipy's inverse regularized incomplete gamma)."""
    from scipy.special import gammaincinv  # late: only a run with a spread of need rates asks

    return float(gammaincinv(shape, u))


def run_rate(profile: Profile, u: float) -> float:
    """The run's need rate: ``need_rate`` when ``need_cv`` is 0, else the ``u`` quantile of a Gamma with mean
    ``need_rate`` and coefficient of variation ``need_cv`` (shape 1 / cv^2)."""
    rate, cv = profile.need_rate or 0.0, profile.need_cv or 0.0
    if not rate or not cv:
        return rate
    shape = 1.0 / (cv * cv)
    value = rate * gamma_quantile(shape, u) / shape
    return value if math.isfinite(value) else rate
