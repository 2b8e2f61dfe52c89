"""What the commands print is words a user can read and paste: no raw None, no %%, TOML that is TOML.

* Every command's help formats, and shows no doubled percent sign (argparse formats an argument's help,
  never a description, so a ``%%`` written for one shows in the other).
* No command prints Python's ``None`` for a value that does not exist.
* ``prunesim defaults --toml`` is a scenario file: it parses, it loads, and it holds every default.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

import pytest
from cli_capture import cli
from prunesim.cli import build_parser
from prunesim.io import scenario_files
from prunesim.io.scenario_files import flat_defaults, load

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _parsers():
    """Every parser a user can ask for help: the top one, each command's, and each plot kind's."""
    top = build_parser()
    out = [("prunesim", top)]
    for action in top._subparsers._group_actions:
        for name, parser in action.choices.items():
            out.append((name, parser))
            for inner in getattr(parser, "_subparsers", None)._group_actions if parser._subparsers else []:
                out += [(f"{name} {kind}", sub) for kind, sub in inner.choices.items()]
    return out


@pytest.mark.parametrize("name, parser", _parsers(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_help_formats_without_a_doubled_percent_sign(name, parser):
    text = parser.format_help()
    assert "%%" not in text and "%(" not in text, name


NO_NONE = [
    ("list",), ("metrics",), ("defaults",), ("defaults", "--markdown"), ("defaults", "--toml"),
    ("run", "oscillation-40", "--set", "turns=15"), ("run", "reentrancy-60"),
    ("compare", "oscillation-40", "--seeds", "0:2", "--set", "turns=15"),
    ("replay", "reentrancy", "--seeds", "0:3"), ("replay", "oscillation", "--seeds", "0:2"),
    ("run", "--workload", FIXTURES / "openai.json"),
    ("agents",), ("agents", "--why"), ("agents", "--markdown"),
    ("defaults", "--explain", "runtime"), ("defaults", "--explain", "pricing.model", "--transcript",
                                           FIXTURES / "openai.json"),
    ("replay", "reentrancy", "--seeds", "0:3", "--json"),
]


@pytest.mark.parametrize("argv", NO_NONE, ids=lambda a: " ".join(map(str, a)))
def test_no_command_prints_a_raw_none(argv):
    code, out, err = cli(*argv)
    assert code == 0, err
    found = [line for line in (out + err).splitlines() if re.search(r"\bNone\b", line)]
    assert found == [], found[:3]


def test_the_reentrancy_replay_says_when_no_run_re_ran_the_command():
    code, out, _ = cli("replay", "reentrancy", "--seeds", "0:3")
    medians = [line.rpartition("median turns from prune to re-run: ")[2] for line in out.splitlines()
               if "median turns from prune to re-run" in line]
    assert medians and all(m == "- (no run re-ran it)" or re.fullmatch(r"\d+(\.\d+)?", m) for m in medians)
    assert "- (no run re-ran it)" in medians  # tombstones stop the re-run in these seeds


def test_defaults_toml_is_a_scenario_file_with_every_default(tmp_path):
    code, text, err = cli("defaults", "--toml")
    assert code == 0, err
    data = tomllib.loads(text)  # TOML, as printed
    path = tmp_path / "every.toml"
    path.write_text(text)
    scenario = load(str(path))
    tables = {name: dataclasses.asdict(table) for name, table in scenario.tables.items()}
    loaded = scenario_files.flatten({**scenario.to_dict(full=True), **tables})
    defaults = flat_defaults()
    for key, value in defaults.items():
        if value is None:  # unset: a comment under its table, never a TOML value
            table, _, name = key.rpartition(".")
            block = text.split(f"[{table}]\n", 1)[1].split("\n[", 1)[0]
            chooser = "the agent profile gives it" if table == "agent" else "a preset or the policy chooses it"
            assert f"# {name} = ...  (unset: {chooser})" in block, key
            assert name not in data.get(table, {}), key
        elif key != "replay.pinned":  # derived: the keys a file sets are the user's (docs/settings.md)
            assert loaded.get(key) == value, key
    assert cli("run", path, "--set", "turns=5")[0] == 0


def test_the_defaults_table_shows_unset_and_empty_lists_as_toml_does():
    code, out, _ = cli("defaults")
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:] if line.split()}
    assert rows["clear_tool_uses.trigger"] == "unset" and rows["workload.initial"] == "[]"
