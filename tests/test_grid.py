"""Grid parsing and expansion: ranges, lists, strings, and an error that names every bad axis."""

import pytest
from prunesim.cli import main
from prunesim.errors import UserError
from prunesim.studies.grid import expand_grid, parse_axes, parse_axis


def test_range_includes_both_ends_when_the_step_lands_on_them():
    name, values = parse_axis("trigger=16000:23500:250")
    assert name == "trigger"
    assert len(values) == 31
    assert values[0] == 16000 and values[-1] == 23500
    assert all(isinstance(v, int) for v in values)


def test_range_stops_before_an_end_the_step_misses():
    assert parse_axis("x=0:10:3")[1] == [0, 3, 6, 9]
    assert parse_axis("x=5:5:1")[1] == [5]


def test_decimal_ranges_are_stepped_exactly():
    assert parse_axis("q=0.1:0.3:0.1")[1] == [0.1, 0.2, 0.3]
    assert parse_axis("q=0:1:0.25")[1] == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_lists_keep_each_items_type_and_strings_are_never_split():
    assert parse_axis("v=1,2.5,true,hard")[1] == [1, 2.5, True, "hard"]
    assert parse_axis("budget_kind=hard")[1] == ["hard"]
    assert parse_axis('name="a:b"')[1] == ["a:b"]  # quoted: a string, not a range
    assert parse_axis("name=a:b")[1] == ["a:b"]  # not numbers: not a range either
    assert expand_grid({"budget_kind": "hard"}) == [{"budget_kind": "hard"}]


def test_expansion_is_the_cartesian_product_with_the_last_axis_fastest():
    points = expand_grid({"a": [1, 2], "b": ["x", "y", "z"]})
    assert len(points) == 6
    assert points[:3] == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 1, "b": "z"}]
    assert points[-1] == {"a": 2, "b": "z"}
    assert expand_grid({}) == [{}]
    assert expand_grid({"t": (1, 2)}) == [{"t": 1}, {"t": 2}]


def test_expansion_refuses_an_axis_with_no_values_and_names_it():
    with pytest.raises(UserError, match="trigger: has no values"):
        expand_grid({"turns": [40], "trigger": []})


@pytest.mark.parametrize(
    "text, message",
    [
        ("trigger", "expected NAME=VALUES"),
        ("trigger=", "trigger: has no values"),
        ("=1,2", "empty parameter name"),
        ("trigger=3:1:1", "trigger: 3:1:1 has no values"),
        ("trigger=1:2", "trigger: range 1:2 must be A:B:STEP"),
        ("trigger=1:5:0", "trigger: range 1:5:0: the step must be positive"),
        ("trigger=1,,2", "trigger: 1,,2 has an empty item"),
        ("trigger=1,2,1", "trigger: value 1 is given twice"),
        ("trigger=0:1:0.000000001", "at most"),
        ("trigger=nan", "not a finite number"),
    ],
)
def test_bad_axes_are_one_error_naming_the_parameter(text, message):
    with pytest.raises(UserError, match=message) as err:
        parse_axis(text)
    assert "\n" not in str(err.value) and str(err.value).startswith("--grid")


def test_an_axis_given_twice_is_refused():
    with pytest.raises(UserError, match="trigger: is given twice"):
        parse_axes(["trigger=1,2", "trigger=3"])


@pytest.mark.parametrize(
    "grid, message",
    [
        ("trigerr=1,2", "--grid: trigerr: unknown scenario parameter"),
        ("workload.tool_output.meen=1,2", "workload.tool_output.meen: unknown scenario parameter"),
        ("workload=1", "workload: is a table or list"),
        ("seed=1,2", "seed: is set by the sweep itself; use --seeds"),
        ("trigger=20000:25000:1000", "--grid: trigger: 25000 is above the budget"),
        ("trigger=5:1:1", "trigger: 5:1:1 has no values"),
        ("budget_kind=hard,firm", "budget_kind: must be one of hard, soft"),
    ],
)
def test_the_command_line_refuses_a_bad_grid_in_one_line_and_writes_nothing(tmp_path, capsys, grid, message):
    out = tmp_path / "sweep"
    assert main(["sweep", "oscillation-40", "--grid", grid, "--seeds", "0:2", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


def test_any_iterable_is_an_axis_and_numpy_numbers_become_python_numbers():
    import numpy as np
    points = expand_grid({"trigger": range(20000, 22001, 1000), "q": np.array([0.5, 0.9])})
    assert len(points) == 6
    assert points[0] == {"trigger": 20000, "q": 0.5} and type(points[0]["q"]) is float
    assert expand_grid({"budget_kind": "soft", "turns": 40}) == [{"budget_kind": "soft", "turns": 40}]
