"""The Python API: the command line's functions, returning plain objects.

>>> from prunesim import api
>>> result = api.run("oscillation-40", policy="naive", seed=3)
>>> result.summary["passes"] > 0
True
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prunesim.io import scenario_files as scenario_mod
from prunesim.io.results import run_record, write_run
from prunesim.model.scenario import Scenario
from prunesim.policies import REGISTRY, get_policy
from prunesim.runner import RunResult, run_one


def load_scenario(name_or_path: str | Scenario, overrides: dict[str, Any] | None = None) -> Scenario:
    """A validated scenario from a shipped name, a path, or a Scenario plus overrides."""
    if isinstance(name_or_path, Scenario):
        return scenario_mod.replace(name_or_path, overrides) if overrides else name_or_path
    return scenario_mod.load(str(name_or_path), overrides)


def run(
    scenario: str | Scenario,
    policy: str | None = None,
    seed: int | None = None,
    overrides: dict[str, Any] | None = None,
    trace: str = "all",
) -> RunResult:
    """Run one scenario under one policy with one seed."""
    sc = load_scenario(scenario, overrides)
    if policy is not None:
        get_policy(policy)
    return run_one(sc, policy, seed, trace=trace)


def write(result: RunResult, out_dir: str | Path) -> list[Path]:
    """Write a run's files (trace, ledger, events, summary) into ``out_dir``."""
    return write_run(result, Path(out_dir))


def record(result: RunResult) -> dict:
    """The run's summary record, as written to summary.json."""
    return run_record(result)


def list_scenarios() -> dict[str, str]:
    out = {}
    for name, path in sorted(scenario_mod.shipped_scenarios().items()):
        data = scenario_mod.read_toml(path)
        out[name] = str(data.get("description", ""))
    return out


def list_policies() -> dict[str, str]:
    return {name: cls.summary for name, cls in sorted(REGISTRY.items())}
