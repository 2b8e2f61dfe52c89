"""prices.toml: the shipped table, its checks, a scenario's [pricing], and the recorded bills it reproduces."""

import dataclasses
import json
from decimal import Decimal

import pytest
from prunesim.cli import main
from prunesim.errors import UserError
from prunesim.io import prices
from prunesim.io import scenario_files as sc
from prunesim.model.scenario import Pricing
from shared_traces import TRACES, needs

DEV = TRACES / "mini-swe-agent-dev"

GOOD = """
[models.m]
provider = "p"
cache = "explicit"
ttl = "5m"
input = 3.0
output = 15.0
cache_read = 0.3
cache_write_5m = 3.75
cache_write_1h = 6.0
min_tokens = 1024
granularity = 1
breakpoints = 4
lookback = 20
window = 200000
reuse = 1.0
source = "https://example.org/prices"
read = "2026-11-29"
notes = ""
"""


def test_every_shipped_entry_loads_with_its_source_and_date():
    table = prices.load()
    assert {"claude-opus-4-5", "gemini-3-pro-preview", "gpt-5-codex"} <= set(table)
    for entry in table.values():
        assert entry["source"].startswith("http") and entry["read"]


def test_pricing_defaults_are_the_claude_opus_entry():
    entry = prices.load()["claude-opus-4-5"]
    assert dataclasses.asdict(Pricing()) == {"model": "claude-opus-4-5", **prices.entry_values(entry)}


def test_anthropic_writes_and_reads_are_the_documented_multiples_of_input():
    e = prices.load()["claude-opus-4-5"]
    assert e["cache_write_5m"] == 1.25 * e["input"]
    assert e["cache_write_1h"] == 2 * e["input"]
    assert e["cache_read"] == 0.1 * e["input"]


@pytest.mark.parametrize("edit, field, problem", [
    ("input = 3.0", "input = -1.0", "input"),
    ("cache = \"explicit\"", "cache = \"sometimes\"", "cache"),
    ("reuse = 1.0", "reuse = 1.5", "reuse"),
    ("ttl = \"5m\"", "ttl = \"10m\"", "ttl"),  # explicit caches are sold for 5m or 1h only
    ("granularity = 1", "granularity = 0", "granularity"),
    ("min_tokens = 1024", "min_tokens = 1.5", "min_tokens"),
])
def test_a_bad_entry_is_one_line_naming_the_model_and_the_field(tmp_path, edit, field, problem):
    path = tmp_path / "prices.toml"
    path.write_text(GOOD.replace(edit, field))
    with pytest.raises(UserError) as err:
        prices.load(path)
    text = str(err.value)
    assert "\n" not in text and "'m'" in text and problem in text and str(path) in text


def test_a_missing_field_is_named(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text(GOOD.replace("cache_read = 0.3\n", ""))
    with pytest.raises(UserError, match=r"model 'm': cache_read.*missing"):
        prices.load(path)


def test_an_unknown_field_and_a_malformed_file(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text(GOOD + "storage = 4.5\n")
    with pytest.raises(UserError, match=r"model 'm': storage.*unknown key"):
        prices.load(path)
    path.write_text("[models.m\n")
    with pytest.raises(UserError, match="malformed TOML"):
        prices.load(path)
    path.write_text(GOOD)
    assert prices.load(path)["m"]["input"] == 3.0


# -- a scenario's [pricing] ------------------------------------------------------------------
def test_pricing_table_selects_an_entry_and_overrides_keys():
    s = sc.from_dict({"pricing": {"model": "gemini-3-pro-preview", "input": 2.5}})
    assert (s.pricing.cache, s.pricing.input, s.pricing.output, s.pricing.granularity) == ("implicit", 2.5, 12.0, 2048)


def test_switching_the_model_keeps_what_the_user_set_and_refills_the_rest():
    base = sc.replace(sc.load("oscillation-40"), {"pricing.cache_read": 0.4})
    s = sc.replace(base, {"pricing.model": "gpt-5-codex"})
    assert (s.pricing.cache, s.pricing.input, s.pricing.cache_read) == ("implicit", 1.25, 0.4)
    assert sc.replace(s, {"pricing.model": "claude-opus-4-5"}).pricing.input == 5.0


@pytest.mark.parametrize("sets, key", [
    ({"pricing.model": "gpt-99"}, "pricing.model"),
    ({"pricing.input": -2}, "pricing.input"),
    ({"pricing.cache": "always"}, "pricing.cache"),
    ({"pricing.reuse": 2.0}, "pricing.reuse"),
    ({"pricing.ttl": "1h30"}, "pricing.ttl"),
    ({"pricing.ttl": "10m"}, "pricing.ttl"),  # the default model caches explicitly: 5m or 1h
    ({"pricing.storage": 1}, "pricing.storage"),
])
def test_a_bad_pricing_table_names_the_key(sets, key):
    with pytest.raises(UserError) as err:
        sc.replace(sc.load("oscillation-40"), sets)
    assert key in str(err.value) and "\n" not in str(err.value)


def test_pricing_for_code_that_builds_scenarios_directly():
    p = prices.pricing("gemini-3-pro-preview", ttl="1h")
    assert (p.input, p.cache, p.ttl, p.ttl_s) == (2.0, "implicit", "1h", 3600.0)
    with pytest.raises(UserError, match="pricing.reuse"):
        prices.pricing("gemini-3-pro-preview", reuse=3)


def test_a_model_outside_the_table_needs_every_key():
    full = {"model": "my-model", **prices.entry_values(prices.load()["gpt-5"])}
    assert sc.from_dict({"pricing": full}).pricing.model == "my-model"
    with pytest.raises(UserError) as err:
        sc.from_dict({"pricing": {"model": "my-model", "input": 1.0}})
    text = str(err.value)
    named = text.split("gives: ", 1)[1].split(";", 1)[0].split(", ")
    assert "'my-model'" in text and named == [k for k in prices.PRICED_KEYS if k != "input"]  # all, at once


def test_the_command_line_reports_a_bad_model_in_one_line(capsys, tmp_path):
    code = main(["run", "oscillation-40", "--set", "pricing.model=nope", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "pricing.model" in err and "nope" in err
    assert not (tmp_path / "r").exists()


# -- the recorded bills ------------------------------------------------------------------------
@needs("mini-swe-agent-dev")
def test_every_recorded_call_cost_in_the_dev_runs_is_reproduced_exactly():
    e = prices.load()["gemini-3-pro-preview"]
    rate = {k: Decimal(repr(e[k])) for k in ("input", "cache_read", "output")}
    checked = 0
    for path in sorted(DEV.glob("*.json")):
        for m in json.loads(path.read_text())["messages"]:
            usage = m.get("extra", {}).get("response", {}).get("usage") if m["role"] == "assistant" else None
            if not usage or "cost" not in usage:
                continue
            prompt, output = usage["prompt_tokens"], usage["completion_tokens"]
            cached = usage["prompt_tokens_details"]["cached_tokens"]
            predicted = ((prompt - cached) * rate["input"] + cached * rate["cache_read"]
                         + output * rate["output"]) / 10**6
            assert predicted == Decimal(repr(usage["cost"])), (path.name, usage)
            checked += 1
    assert checked == 1420  # every call that records a cost (two runs were billed without one)
