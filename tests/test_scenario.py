import pytest
from prunesim.errors import UserError
from prunesim.io import scenario_files as sc


def test_shipped_oscillation_holds_the_seed_setting(oscillation):
    o = oscillation
    assert (o.window, o.budget, o.budget_kind, o.trigger, o.turns) == (32000, 24000, "hard", 22000, 40)


@pytest.mark.parametrize("name", sorted(sc.shipped_scenarios()))
def test_every_parameter_of_every_shipped_scenario_is_commented_and_valid(name):
    path = sc.shipped_scenarios()[name]
    sc.load(name)
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if "=" in stripped and not stripped.startswith("#") and not stripped.startswith("["):
            assert "#" in stripped, f"uncommented parameter: {stripped}"


def test_overrides_reach_nested_tables():
    s = sc.load("oscillation-40", {"trigger": 20000, "workload.tool_output.mean": 300})
    assert s.trigger == 20000
    assert s.workload.tool_output.mean == 300.0


@pytest.mark.parametrize(
    "text, expected",
    [("trigger=20000", ("trigger", 20000)), ("budget_kind=soft", ("budget_kind", "soft")),
     ("a.b=1.5", ("a.b", 1.5)), ("name='x y'", ("name", "x y"))],
)
def test_parse_set(text, expected):
    assert sc.parse_set(text) == expected


@pytest.mark.parametrize("text", ["trigger", "=5", "trigger=", "a..b=1", "x=nan", "x=inf"])
def test_malformed_set_is_a_user_error(text):
    with pytest.raises(UserError):
        sc.parse_set(text)


@pytest.mark.parametrize(
    "overrides, key, words",
    [
        ({"turns": "many"}, "turns", "integer"),
        ({"window": -5}, "window", "positive"),
        ({"budget": 40000}, "budget", "above the window"),
        ({"trigger": 30000}, "trigger", "above the budget"),
        ({"budget_kind": "squishy"}, "budget_kind", "one of"),
        ({"workload.tool_output.mean": -1}, "workload.tool_output.mean", "positive"),
        ({"workload.reasoning.sigma": -0.5}, "workload.reasoning.sigma", "negative"),
        ({"decision.selection_quality": 1.5}, "decision.selection_quality", "between 0 and 1"),
        ({"nonsense": 1}, "nonsense", "unknown key"),
        ({"workload.nonsense": 1}, "workload.nonsense", "unknown key"),
        ({"policy": "nope"}, "policy", "unknown policy"),
        ({"turns": 10**15}, "turns", "out of range"),
        ({"workload": 3}, "workload", "table"),
    ],
)
def test_bad_values_name_the_key(overrides, key, words):
    with pytest.raises(UserError) as err:
        sc.load("oscillation-40", overrides)
    assert err.value.key == key
    assert words in str(err.value)
    assert "\n" not in str(err.value)


def test_malformed_toml_names_the_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("turns = = 4\n")
    with pytest.raises(UserError) as err:
        sc.load(str(bad))
    assert str(bad) in str(err.value) and "malformed TOML" in str(err.value)


def test_unknown_scenario_and_directory_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="unknown scenario"):
        sc.load("no-such-scenario")
    with pytest.raises(UserError, match="directory"):
        sc.load(str(tmp_path))


def test_binary_file_is_a_user_error(tmp_path):
    bad = tmp_path / "bin.toml"
    bad.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(UserError, match="UTF-8"):
        sc.load(str(bad))
