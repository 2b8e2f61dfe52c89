"""What a recommendation assumes: each value it rests on, where it came from, and the range it is drawn over.

:func:`assumptions` lists them once for a set of units, in one place, reading where a
value came from in the run's resolved settings (:mod:`prunesim.io.settings`) where
they say. Each :class:`Assumption` says how a draw changes it:

* **re-priced** (:mod:`prunesim.studies.reprice`): an implicit cache's fitted
  ``reuse``, drawn uniformly over its value +/- 10% (clipped to [0, 1]; no
  interval of the fit is shipped, and the issue that asked for this showed signs
  flipping within +/- 10%), and, for a transcript that does not record its
  model, whether the provider caches at all (on or off, even odds). An explicit
  cache's ``reuse`` is 1 by what the provider documents (a live matching entry is
  always read), and the replay reproduces the recorded cached tokens with it:
  it is fixed, with source ``documented``;
* **re-simulated**: the summary's mean size (what a compaction writes, and so
  what later prompts hold and when the next compaction comes) and the closed
  loop's re-fetch probability (which needs turn into calls). A draw takes one of
  three levels, the middles of the terciles of the value's distribution, each
  replayed once (:data:`STRATA`); the range reported, and the ends tried when
  asking which assumption would change the top of the ranking, are its 2.5% and
  97.5% quantiles:

  - summary size: the scenario's mean plus Student's t (2 degrees of freedom)
    times the standard error of the mean of the three summaries it comes from
    (:data:`prunesim.policies.summary.SEEN_SIZES`);
  - re-fetch probability: the fit's excess of re-reads over the null
    (``(observed - baseline) / (1 - baseline)``, ``sim/model/reaction.json``),
    each share drawn from its Jeffreys posterior (Beta(k + 1/2, n - k + 1/2)),
    clipped to [0, 1], its quantiles from 20,000 draws of a fixed generator.

A value the user set (``--set``) is fixed, with source ``user``, and not drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from prunesim.model.reaction import shipped_fit
from prunesim.policies.summary import SEEN_SIZES

REPRICED, RESIMULATED, FIXED = "re-priced", "re-simulated", "fixed"
CENTRE = "c"
STRATA = ("q1", "q2", "q3")
QUANTILES = {"lo": 0.025, "q1": 1 / 6, "q2": 0.5, "q3": 5 / 6, "hi": 0.975}
REUSE_SPREAD = 0.10
POSTERIOR_DRAWS = 20_000
SUMMARY, REACTION = "summary.mean_tokens", "reaction.probability"


@dataclass(frozen=True)
class Billing:
    """How one unit is billed: the model, whether it is the one its file names, the pricing the replay runs with,
    and the model the file names ('' when none)."""

    model: str
    recorded: bool
    pricing: object
    named: str = ""


@dataclass(frozen=True)
class Assumption:
    """One value a recommendation rests on (module docstring). ``levels``: the value at each level a draw or the
    ranking's sensitivity uses (``lo``, ``hi``, and the strata of a re-simulated one)."""

    name: str
    value: object
    source: str  # recorded | fitted | documented | default | user
    range: tuple | None
    how: str
    basis: str
    levels: dict = field(default_factory=dict)
    model: str = ""  # the model a pricing assumption is about

    def to_json(self) -> dict:
        return {"name": self.name, "value": self.value, "source": self.source,
                "range": list(self.range) if self.range is not None else None, "how": self.how, "basis": self.basis}


def summary_levels(mean: float) -> dict[str, float]:
    """The summary size at each level: ``mean`` plus t(2) times the standard error of the seen sizes."""
    from scipy.stats import t

    n = len(SEEN_SIZES)
    se = float(np.std(SEEN_SIZES, ddof=1)) / math.sqrt(n)
    return {name: max(1.0, round(mean + se * float(t.ppf(q, n - 1)), 1)) for name, q in QUANTILES.items()}


def reaction_levels() -> dict[str, float]:
    """The re-fetch probability at each level, from the shipped fit's counts (module docstring)."""
    fit = shipped_fit()
    rng = np.random.default_rng(0)
    observed = rng.beta(fit["rereads"] + 0.5, fit["needs"] - fit["rereads"] + 0.5, POSTERIOR_DRAWS)
    baseline = rng.beta(fit["held_rereads"] + 0.5, fit["held_touches"] - fit["held_rereads"] + 0.5, POSTERIOR_DRAWS)
    p = np.clip((observed - baseline) / (1 - baseline), 0.0, 1.0)
    return {name: round(float(np.quantile(p, q)), 4) for name, q in QUANTILES.items()}


def _where(scenario, key: str) -> str:
    """Where the resolved settings say ``key``'s value came from (prunesim.io.settings), '' when they cannot say."""
    if scenario is None:
        return ""
    from prunesim.io import settings

    try:
        return settings.of(scenario)[key].where
    except (KeyError, AttributeError):
        return ""


def agent_assumptions(profiles: list, user: set[str], transcripts: bool) -> list[Assumption]:
    """The agent profile each unit's runs took, and each parameter of it that is on, with where it came from.

    ``profiles``: one per unit (:class:`prunesim.model.agent_profiles.Profile`, None: no agent model). None of them
    is drawn: the fit (``sim/model/agent_fit.json``) gives each fitted value as a point, with no interval to draw it
    over, and the others are documented or set by hand (docs/agent.md)."""
    out: list[Assumption] = []
    by_name: dict[str, list] = {}
    for p in profiles:
        by_name.setdefault(p.name if p is not None else "none", []).append(p)
    for name, group in by_name.items():
        units = f"{len(group)} unit(s)"
        if "agent.profile" in user:
            source, basis = "user", f"set with --agent or --set agent.profile ({units})"
        elif transcripts:
            source = "recorded"
            basis = (f"the scaffold that recorded the transcripts, by their format ({units})" if name != "none"
                     else f"their format has no profile: no agent model runs ({units})")
        else:
            source, basis = "default", f"a synthetic run under auto has no agent model ({units})"
        out.append(Assumption("agent.profile", name, source, None, FIXED, basis))
        p = group[0]
        if p is None:
            continue
        for param, value in p.values.items():
            if value is None:
                continue
            where = p.sources.get(param, "")
            kind = ("user" if where == "user" else "fitted" if "fitted" in where else
                    "documented" if "documented" in where else "default")
            why = {"fitted": "a point of the fit, which gives no interval: not drawn",
                   "default": "set by hand until a fit gives it (docs/agent.md): not drawn",
                   "documented": "the scaffold's documented setting", "user": "set with --set"}[kind]
            if param == "cap" and transcripts and value:
                why += "; a recording longer than it runs to its own length"
            if isinstance(value, float):
                value = float(f"{value:.6g}")
            out.append(Assumption(f"agent.{param} ({name})", value, kind, None, FIXED, f"{where}: {why}"))
    return out


def assumptions(base, billings: list[Billing], user: set[str], summaries: bool, reacts: bool,
                transcripts: bool = True, profiles: list | None = None) -> list[Assumption]:
    """Every assumption of a recommendation over units billed as ``billings`` (module docstring).

    ``user``: the dotted keys the user set; ``summaries``: some policy writes a model summary; ``reacts``: the
    closed loop re-fetches on some unit; ``profiles``: the agent profile of each unit (listed with
    :func:`agent_assumptions`; None: not listed). Where a value came from is read from the resolved settings
    (:mod:`prunesim.io.settings`) where they say."""
    out: list[Assumption] = []
    by_model: dict[str, list[Billing]] = {}
    for b in billings:
        by_model.setdefault(b.model, []).append(b)
    for model, group in by_model.items():
        p = group[0].pricing
        recorded = transcripts and all(b.recorded for b in group)
        other = sorted({b.named for b in group if b.named and b.named != model})
        model_source = "user" if "pricing.model" in user or other else ("recorded" if recorded else "default")
        where = ("the scenario's [pricing]" if not transcripts else
                 f"the transcripts record {', '.join(other)}, but a [pricing] key set with --set keeps the "
                 "scenario's model" if other else "the transcripts record it" if recorded else
                 "the transcripts do not record their model: their format's runtime's default, else the scenario's")
        out.append(Assumption(f"pricing.model ({model})", model, model_source, None, FIXED, where, model=model))
        if "pricing.reuse" in user:
            out.append(Assumption(f"pricing.reuse ({model})", p.reuse, "user", None, FIXED, "set with --set",
                                  model=model))
        elif p.cache != "implicit":
            why = ("no cache: nothing is read" if p.cache == "none" else "an explicit cache reads every live entry "
                   "that matches (the replay's cached tokens are within 0.02% of the recorded ones, median, on "
                   "claude-code-dev: docs/cost.md)")
            out.append(Assumption(f"pricing.reuse ({model})", p.reuse, "documented", None, FIXED, why, model=model))
        else:
            low, high = max(0.0, p.reuse * (1 - REUSE_SPREAD)), min(1.0, p.reuse * (1 + REUSE_SPREAD))
            out.append(Assumption(f"pricing.reuse ({model})", p.reuse, "fitted", (round(low, 4), round(high, 4)),
                                  REPRICED, "the fit of an implicit cache's hits (docs/cost.md; prices.toml: "
                                  f"models.{model}.reuse); drawn uniformly over +/- 10%", {"lo": low, "hi": high},
                                  model=model))
        if not recorded and not other and transcripts and not ({"pricing.cache", "pricing.model"} & user) \
                and p.cache != "none":
            out.append(Assumption(f"pricing.cache ({model})", p.cache, "default", (p.cache, "none"), REPRICED,
                                  "the provider is not recorded: does it cache at all? drawn on or off at even odds",
                                  {"lo": "none", "hi": p.cache}, model=model))
    if summaries:
        mean = base.summary.mean_tokens
        if SUMMARY in user:
            out.append(Assumption(SUMMARY, mean, "user", None, FIXED, "set with --set"))
        else:
            levels = summary_levels(mean)
            out.append(Assumption(SUMMARY, mean, "fitted", (levels["lo"], levels["hi"]), RESIMULATED,
                                  f"the mean of {len(SEEN_SIZES)} recorded compaction summaries "
                                  f"({', '.join(f'{s:,}' for s in SEEN_SIZES)} tokens); t interval of that mean",
                                  levels))
    if reacts:
        prob = base.reaction.probability
        if REACTION in user or "reaction.mode" in user:
            out.append(Assumption(REACTION, prob, "user", None, FIXED, "set with --set or --reaction"))
        else:
            levels = reaction_levels()
            where = _where(base, REACTION) or "sim/model/reaction.json"
            out.append(Assumption(REACTION, prob, "fitted", (levels["lo"], levels["hi"]), RESIMULATED,
                                  f"{where}: re-reads after a removal over the null; Jeffreys posteriors of both "
                                  "shares", levels))
    if profiles is not None:
        out.extend(agent_assumptions(profiles, user, transcripts))
    return out
