"""The Python API: the command line's functions, returning plain objects.

>>> from prunesim import api
>>> result = api.run("oscillation-40", policy="naive", seed=3)
>>> result.summary["passes"] > 0
True
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from prunesim.errors import UserError
from prunesim.io import scenario_files as scenario_mod
from prunesim.model.scenario import Scenario, seed_problem
from prunesim.policies import Policy, available, get_policy

# The simulator (SimPy, numpy) is imported by the functions that run it: listing scenarios and policies
# (``prunesim list``) starts without it.
if TYPE_CHECKING:
    from prunesim.runner import RunResult


def __getattr__(name: str):
    """``api.RunResult``, as before the simulator was imported lazily (it is, at the first use)."""
    if name == "RunResult":
        from prunesim.runner import RunResult

        return RunResult
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


GIVEN_AS = "overrides"  # what an error in the caller's overrides names: the argument, not the CLI's --set


def load_scenario(name_or_path: str | Scenario, overrides: dict[str, Any] | None = None,
                  policy: str | type[Policy] | list | tuple | None = None, *, given_as: str = GIVEN_AS,
                  prices: str | Path | None = None) -> Scenario:
    """A validated scenario from a shipped name, a path, or a Scenario plus overrides.

    ``policy``: the policy it will run under, when not its own, or a list of them: the tables those policies
    declare may be overridden, whether or not they were ever loaded before in this process, and the tables
    they read are checked against the scenario (only those: a table no policy in play reads is never a
    reason to refuse). ``given_as``: what an error in
    the overrides names them as (the command line passes ``--set``); ``prices``: a price file (``--prices``).
    Every value keeps where it came from: :func:`settings` reads it.
    """
    if isinstance(name_or_path, Scenario):
        if prices is not None:
            raise UserError("api.load_scenario", "prices", "applies to a scenario file or name, not to a Scenario")
        return scenario_mod.replace(name_or_path, overrides, policy=policy) if overrides else name_or_path
    return scenario_mod.load(str(name_or_path), overrides, policy, given_as, prices)


def settings(scenario_or_result) -> Any:
    """The :class:`~prunesim.io.settings.Settings` of a scenario or a run: every value with its source (``user``,
    ``recorded``, ``fitted``, ``default``) and where it came from.

    >>> from prunesim import api
    >>> s = api.settings(api.load_scenario("oscillation-40", {"pricing.reuse": 0.9}))
    >>> s["pricing.reuse"].source, s["pricing.model"].source
    ('user', 'default')
    """
    from prunesim.io import settings as resolved

    found = getattr(scenario_or_result, "settings", None)
    if found is not None and not isinstance(scenario_or_result, Scenario):
        return found
    scenario = getattr(scenario_or_result, "scenario", scenario_or_result)
    return resolved.of(scenario)


def _check_arguments(seed, overrides, trace) -> None:
    """What a caller passed, as the command line checks its flags: one :class:`UserError` naming the argument."""
    if seed is not None and (problem := seed_problem(seed)):  # numpy's integers are seeds too
        raise UserError("api.run", "seed", problem)
    if overrides is not None and not (isinstance(overrides, dict) and all(isinstance(k, str) for k in overrides)):
        raise UserError("api.run", "overrides", "must be a dict of dotted parameter names (strings) to values "
                        f"(got {type(overrides).__name__})")
    if trace not in ("all", "turns", "none"):
        raise UserError("api.run", "trace", f"must be one of all, turns, none (got {trace!r})")


def run(
    scenario: str | Scenario | None = None,
    policy: str | type[Policy] | None = None,
    seed: int | None = None,
    overrides: dict[str, Any] | None = None,
    trace: str = "all",
    workload=None,
    *,
    agent: str | None = None,
    given_as: str = GIVEN_AS,
) -> RunResult:
    """Run one scenario under one policy with one seed.

    ``policy`` is a registered name, ``"path/to/file.py:ClassName"`` or a
    :class:`~prunesim.policies.Policy` subclass. ``workload`` replays a real
    transcript instead of the synthetic tool loop: a workload file or a one-run
    transcript file (any format ``prunesim import`` reads), or a
    :class:`~prunesim.io.transcripts.workload.WorkloadData`; the scenario then
    defaults to ``"transcript"`` and the summary holds the replay metrics.
    ``agent``: the agent model's profile (``[agent] profile``: ``"auto"``, ``"none"`` or a profile's name,
    docs/agent.md); the result's ``outcome`` and summary then say what the policy did to the agent.
    ``given_as``: what errors and hints call ``overrides`` (a command line passes ``"--set"``).
    """
    _check_arguments(seed, overrides, trace)
    if agent is not None:
        given = (overrides or {}).get("agent.profile", agent)
        if given != agent:
            raise UserError("api.run", "agent", f"{agent!r} contradicts overrides agent.profile={given!r}")
        overrides = {**(overrides or {}), "agent.profile": agent}
    if policy is not None:
        get_policy(policy)  # first: a policy from a file or a plugin may declare its own table
    if workload is not None:
        return _replay(scenario, policy, seed, overrides, workload, given_as, trace)
    if scenario is None:
        raise UserError("api.run", None, "give a scenario or a workload")
    from prunesim.runner import run_one

    return run_one(load_scenario(scenario, overrides, policy, given_as=given_as), policy, seed, trace=trace)


def _replay(scenario, policy, seed, overrides, workload, given_as: str, trace: str) -> RunResult:
    from prunesim.io.transcripts.workload import WorkloadData
    from prunesim.studies.transcript_replay import one_workload, replay

    scenario_mod.check_replay_overrides(overrides, given_as)
    base = load_scenario("transcript" if scenario is None else scenario, overrides, policy, given_as=given_as)
    data = workload if isinstance(workload, WorkloadData) else one_workload(workload)
    result, _ = replay(data, base, policy, seed, trace=trace, given_as=given_as)
    return result


def write(result: RunResult, out_dir: str | Path) -> list[Path]:
    """Write a run's files (trace, ledger, events, summary, and reproduce.json: its version and seed, with no
    command, as it was run from Python) into ``out_dir``: a run recorded with ``trace`` "turns" or "all" (one
    run with "none" kept no ledger, events or calls: a ValueError)."""
    from prunesim.io import reproduce
    from prunesim.io.results import write_run

    return write_run(result, Path(out_dir), reproduce.record([result.seed]))


def record(result: RunResult) -> dict:
    """The run's summary record, as written to summary.json."""
    from prunesim.io.results import run_record

    return run_record(result)


def unquote_cell(value):
    """A cell of a CSV file prunesim wrote, back as the value it was given.

    A text cell that would start a spreadsheet formula (``=``, ``+``, ``-``, ``@``, a tab or a carriage return
    first) or that starts with a single quote was written with one more single quote before it; this removes it.
    Numbers, and any value that is not text, are returned as they are. With pandas::

        frame = pandas.read_csv("out/runs.csv").map(api.unquote_cell)

    >>> unquote_cell("'=1+2"), unquote_cell("''quoted"), unquote_cell("naive"), unquote_cell(-3)
    ('=1+2', "'quoted", 'naive', -3)
    """
    from prunesim.observe.cells import recover

    return recover(value)


def list_scenarios() -> dict[str, str]:
    out = {}
    for name, path in sorted(scenario_mod.shipped_scenarios().items()):
        data = scenario_mod.read_toml(path)
        out[name] = str(data.get("description", ""))
    return out


def list_policies() -> dict[str, str]:
    """Every policy that can be named (built-in and registered by installed packages), with its summary."""
    return {name: cls.summary for name, cls in sorted(available().items())}
