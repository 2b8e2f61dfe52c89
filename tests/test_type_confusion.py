"""A value of the wrong type anywhere in a file prunesim reads is one line naming the file, never a crash.

The readers not fuzzed in tests/test_fuzz_readers.py: targets files (TOML), a leaderboard's files, a replay's
JSON and the records of what reproduces a result. Each example takes a real file, puts a value of another
type at one place in it (a list where a name goes, a table, an integer of 400 digits, an empty string, a
boolean, a null) and reads it: the reader accepts it or refuses it in one line naming the file; it never
reports its own bug and never writes a half result.
"""

from __future__ import annotations

import copy
import json
import shutil
import tomllib
from pathlib import Path

import pytest
import tomli_w
from cli_capture import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prunesim.errors import UserError
from prunesim.studies.targets import load_targets
from test_reliability import _paths, _set

ROOT = Path(__file__).resolve().parents[1]
CONFUSED = [["x"], {"k": 1}, "", 10**400, -(10**400), True, 1.5, "x", [], {"": []}, 0, -1]
FEW = settings(max_examples=6, deadline=None, derandomize=True,  # each example draws a figure
               suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _places(doc) -> list[tuple]:
    return list(_paths(doc))


def _put(doc, path, value):
    return _set(copy.deepcopy(doc), path, value)


def _one_line(code: int, err: str) -> None:
    assert "internal error" not in err and "Traceback" not in err, err
    if code:
        assert code == 2 and len([line for line in err.splitlines() if line.startswith("prunesim: error")]) == 1, err


TARGETS = tomllib.loads((ROOT / "scenarios" / "targets" / "seed-000.toml").read_text())
@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_targets_file_of_any_type_anywhere_loads_or_is_one_line(tmp_path, data):
    place = data.draw(st.sampled_from(list(_places(TARGETS))[1:]))
    value = data.draw(st.sampled_from(CONFUSED))
    path = tmp_path / "t.toml"
    path.write_text(tomli_w.dumps(_put(TARGETS, place, value)))
    try:
        load_targets(str(path))
    except UserError as err:
        assert str(err).startswith(str(path)) and "\n" not in str(err), str(err)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("results")
    for argv in (("leaderboard", "--scenario", "oscillation-40", "--seeds", "0:2", "--set", "turns=15", "--policies",
                  "noop,naive", "--out", root / "lb"),
                 ("replay", "oscillation", "--seeds", "0:2", "--out", root / "replay.json"),
                 ("run", "oscillation-40", "--set", "turns=15", "--out", root / "run")):
        code, _, err = cli(*argv)
        assert code == 0, err
    return root


def _confuse(results: Path, tmp_path: Path, name: str, data) -> Path:
    """A copy of ``results``, with one value of ``name`` (a JSON file) changed to one of another type."""
    tree = tmp_path / "tree"
    if tree.exists():
        shutil.rmtree(tree)
    shutil.copytree(results, tree)
    doc = json.loads((tree / name).read_text())
    place = data.draw(st.sampled_from(list(_places(doc))[1:]))
    (tree / name).write_text(json.dumps(_put(doc, place, data.draw(st.sampled_from([*CONFUSED, None])))))
    return tree


@pytest.mark.parametrize("name, read", [("lb/leaderboard.json", "lb"), ("replay.json", "replay.json"),
                                        ("run/reproduce.json", "run")])
@FEW
@given(data=st.data())
def test_a_result_json_of_any_type_anywhere(results, tmp_path, data, name, read):
    """The report reads the most of each (more of leaderboard.json than plot pareto)."""
    tree = _confuse(results, tmp_path, name, data)
    code, _, err = cli("report", tree / read, "--out", tmp_path / "r.html")
    _one_line(code, err)


@FEW
@given(row=st.integers(1, 20), column=st.sampled_from(["policy", "figure", "median", "setting", "n"]),
       value=st.sampled_from(["", "x", "1e999", "-", "99999999999999999999", "true"]))
def test_a_leaderboard_csv_cell_of_any_kind(results, tmp_path, row, column, value):
    tree = tmp_path / "tree"
    if tree.exists():
        shutil.rmtree(tree)
    shutil.copytree(results, tree)
    lines = (tree / "lb" / "leaderboard.csv").read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[min(row, len(lines) - 1)].split(",")
    cells[header.index(column)] = value
    lines[min(row, len(lines) - 1)] = ",".join(cells)
    (tree / "lb" / "leaderboard.csv").write_text("\n".join(lines) + "\n")
    code, _, err = cli("plot", "pareto", tree / "lb", "--out", tmp_path / "p.png")
    _one_line(code, err)
    if code == 0 and column in ("policy", "figure"):
        assert value.strip(), "an empty name was drawn"


BIG = st.one_of(st.integers(-(10**6), 10**6), st.integers(10**20, 10**400).map(lambda n: n),
                st.sampled_from(["1e400", "-1e400", "0.000000000000000000000000000001", "1e-400", "nan", "inf"]))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(a=BIG, b=BIG, step=BIG)
def test_a_grid_range_of_any_size_is_values_or_one_line(a, b, step):
    from prunesim.studies.grid import MAX_POINTS, parse_axes

    try:
        axes = parse_axes([f"budget={a}:{b}:{step}"])
    except UserError as err:
        assert str(err).startswith("--grid: budget: ") and "\n" not in str(err) and len(str(err)) < 200, str(err)
    else:
        assert len(axes["budget"]) <= MAX_POINTS


CALIBRATIONS = json.loads((ROOT / "sim" / "io" / "transcripts" / "calibrations.json").read_text())


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_calibration_file_of_any_type_anywhere_loads_or_is_one_line(tmp_path, data):
    from prunesim.io.transcripts.calibration import load_profiles

    place = data.draw(st.sampled_from(_places(CALIBRATIONS)[1:]))
    path = tmp_path / "c.json"
    path.write_text(json.dumps(_put(CALIBRATIONS, place, data.draw(st.sampled_from([*CONFUSED, None])))))
    try:
        load_profiles(path)
    except UserError as err:
        assert str(err).startswith(str(path)) and "\n" not in str(err), str(err)
