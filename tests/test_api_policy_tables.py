"""A Policy subclass given to the API brings its own tables, whatever ran before in the process."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from prunesim import api
from prunesim.policies import Policy

SIM = Path(__file__).resolve().parents[1] / "sim"


@dataclass
class KeepTable:
    keep: int = 1000

    def check(self, key: str, where: str, scenario) -> None:
        pass


class KeepPolicy(Policy):
    name = "keep-table-test"
    tables = {"keep_table_test": KeepTable}

    def decide(self, view):
        return []


def test_a_policy_class_tables_can_be_overridden_in_a_fresh_process(tmp_path):
    """In a process where the class was never loaded by a path string: the first call must work."""
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from prunesim import api
        from test_api_policy_tables import KeepPolicy
        result = api.run("oscillation-40", policy=KeepPolicy, seed=1, overrides={{"keep_table_test.keep": 2500}},
                         trace="none")
        print(result.scenario.keep_table_test.keep)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2500"


def test_the_same_call_gives_the_same_scenario_before_and_after_loading_by_path(tmp_path):
    first = api.run("oscillation-40", policy=KeepPolicy, seed=1, overrides={"keep_table_test.keep": 2500},
                    trace="none")
    (tmp_path / "keep.py").write_text("from test_api_policy_tables import KeepPolicy\n")
    sys.path.insert(0, str(Path(__file__).parent))
    api.run("oscillation-40", policy=f"{tmp_path / 'keep.py'}:KeepPolicy", seed=1, trace="none")
    second = api.run("oscillation-40", policy=KeepPolicy, seed=1, overrides={"keep_table_test.keep": 2500},
                     trace="none")
    assert first.scenario.to_dict() == second.scenario.to_dict()
    assert first.summary == second.summary


def test_the_scenario_types_import_no_policy_registry():
    """The model layer checks values; which policies exist is for the io layer that loads scenarios."""
    tree = ast.parse((SIM / "model" / "scenario.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any(m and m.startswith("prunesim.policies") for m in imported)
