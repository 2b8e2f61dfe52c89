"""A sweep's run ids, rows, appends and batches: the fast paths give what the plain definitions give."""

import hashlib
import json
import math
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from prunesim.io import scenario_files as scenario_mod
from prunesim.io.atomic import format_cell, json_ready
from prunesim.observe.recorder import csv_line
from prunesim.studies import sweep
from prunesim.studies.sweep import RUNS_FILE, RunSpec, plan_sweep, run_id, run_ids, run_sweep

BASE = scenario_mod.load("oscillation-40").to_dict()


def reference_id(scenario: dict, policy: str, seed, version: str) -> str:
    """run_id as the sweep has always defined it: the whole object as compact sorted JSON, hashed."""
    replay = scenario.get("replay")
    if isinstance(replay, dict) and replay.get("pinned"):
        scenario = {**scenario, "replay": {k: v for k, v in replay.items() if k != "pinned"}}
    blob = json.dumps(json_ready({"scenario": scenario, "policy": policy, "seed": seed, "version": version}),
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


@pytest.mark.parametrize("scenario", [
    BASE,
    {**BASE, "trigger": 21000, "name": "prüfung, \"quoted\"", "extra": [1.5, math.inf, -math.inf, {"b": 1, "a": 2}]},
    {**BASE, "replay": {"pinned": ["window"], "recorded": True}},
    {"replay": {"pinned": []}, "z": math.nan, "a": None, 3: "int key"},
])
def test_the_ids_of_many_seeds_are_the_ids_of_each_seed(scenario):
    seeds = [0, 1, 99, 2**40 + 7, np.int64(5), np.uint32(12)]
    for policy, version in (("naive", "1.0"), ("path/to/my policy.py:Mine", "9.9.dev1")):
        expected = [reference_id(scenario, policy, seed, version) for seed in seeds]
        assert run_ids(scenario, policy, seeds, version) == expected
        assert [run_id(scenario, policy, seed, version) for seed in seeds] == expected
    assert len(set(expected)) == len(seeds)


def test_a_planned_sweep_names_each_run_by_its_own_id():
    plan = plan_sweep("oscillation-40", {"trigger": [20000, 22000]}, ["naive", "recency"], [0, 3, 7])
    for spec in plan.runs:
        assert spec.run_id == reference_id(plan.scenarios[spec.point].to_dict(), spec.policy, spec.seed, plan.version)


values = st.one_of(st.integers(min_value=-(10**20), max_value=10**20), st.floats(allow_nan=True, allow_infinity=True),
                   st.booleans(), st.none(), st.text(max_size=8), st.sampled_from([np.float64(0.25), np.int64(-3)]))


@given(st.lists(values, min_size=1, max_size=12), st.data())
def test_a_row_is_the_csv_line_of_its_cells(figures, data):
    """Whatever the figures hold (numbers, bools, text to quote, numpy scalars, a metric missing, in any order), and
    whatever the names and grid values (commas, quotes, line ends), a row is csv_line of format_cell's cells."""
    names = [f"m{i}" for i in range(len(figures))]
    missing = data.draw(st.sets(st.sampled_from(names), max_size=2))
    given = data.draw(st.permutations(list(zip(names, figures, strict=True))))  # any order: the columns' wins
    summary = {n: v for n, v in given if n not in missing}
    text = st.text(min_size=1, max_size=6)
    axes = {"trigger": [data.draw(text)], "gate.lead": [data.draw(st.one_of(text, st.floats(allow_nan=False)))]}
    plan = sweep.SweepPlan(data.draw(text), None, axes, [{"trigger": axes["trigger"][0]}], [], [data.draw(text)],
                           [0], {}, version=data.draw(text))
    spec = RunSpec("0123456789abcdef", 0, plan.policies[0], data.draw(st.integers(0, 2**63)))
    columns = [*sweep.ID_COLUMNS, *axes, *names]
    row = sweep._row_maker(plan, columns)(spec, summary)
    cells = [spec.run_id, plan.scenario_name, spec.policy, format_cell(spec.seed), plan.version,
             format_cell(axes["trigger"][0]), ""]  # gate.lead is not this point's: empty
    cells += [format_cell(summary[n]) if n in summary else "" for n in names]
    assert row == csv_line(cells)


def test_a_row_with_a_metric_its_first_run_did_not_report_is_refused():
    plan = plan_sweep("oscillation-40", None, ["naive"], [0])
    row = sweep._row_maker(plan, [*sweep.ID_COLUMNS, "passes"])
    with pytest.raises(RuntimeError, match=r"reported metrics \['surprise'\] that its first run .* did not"):
        row(plan.runs[0], {"passes": 1, "surprise": 2})


def test_appended_rows_are_in_the_file_at_once_and_on_disk_by_the_end(tmp_path, monkeypatch):
    path = tmp_path / RUNS_FILE
    path.write_text("run_id,x\n")
    synced = []
    monkeypatch.setattr(os, "fdatasync", lambda fd: synced.append(path.read_text().count("\n")))
    lines = {}
    appender = sweep._Appender(path, lines, sync_s=3600)
    for i in range(3):
        appender.write([(f"r{i}", f"r{i},{i}\n")])
        assert path.read_text().count("\n") == 2 + i  # readable (and safe from a kill) before any sync
    assert synced == []  # within the interval: no sync yet
    appender.close()
    assert synced == [4]  # every line, once, before the sweep ends
    assert lines == {"r0": "r0,0\n", "r1": "r1,1\n", "r2": "r2,2\n"}
    every = sweep._Appender(path, {}, sync_s=0)
    every.write([("r3", "r3,3\n")])
    every.write([("r4", "r4,4\n")])
    every.close()  # nothing left to sync
    assert synced == [4, 5, 6]


def test_batches_hold_each_run_once_in_order_and_kernel_batches_are_larger(tmp_path):
    plan = plan_sweep("oscillation-40", {"trigger": [20000, 21000, 22000]}, ["naive", "recency"], range(200))
    engines = {(p, policy): "kernel" if policy == "naive" else "simpy" for p in range(3) for policy in ("naive",
                                                                                                        "recency")}
    specs = {s.run_id: s for s in plan.runs}
    for jobs in (1, 2, 8):
        batches = sweep._batches(plan, plan.runs, jobs, engines)
        assert [(rid, seed) for _, _, items, _ in batches for rid, seed in items] == [(s.run_id, s.seed)
                                                                                      for s in plan.runs]
        fair = math.ceil(len(plan.runs) / (jobs * 16))
        for scenario, policy, items, engine in batches:
            assert engine == engines[(specs[items[0][0]].point, policy)]
            assert len(items) <= min(sweep.MAX_BATCH[engine], fair)
            assert {(specs[rid].point, specs[rid].policy) for rid, _ in items} == {(specs[items[0][0]].point, policy)}
            assert scenario is plan.scenarios[specs[items[0][0]].point]
    sizes = {"naive": [], "recency": []}
    for _, policy, items, _ in sweep._batches(plan, plan.runs, 1, engines):
        sizes[policy].append(len(items))
    # 1,200 runs for one worker: 16 batches' worth is 75 runs, which SimPy's 32 caps and the kernel's does not
    assert sizes == {"naive": [75, 75, 50] * 3, "recency": ([32] * 6 + [8]) * 3}


def test_a_resumed_sweep_whose_rows_are_out_of_order_ends_sorted_as_a_whole_one(tmp_path):
    grid, seeds = {"trigger": [20000, 22000]}, range(3)
    whole, part = tmp_path / "whole", tmp_path / "part"
    run_sweep("oscillation-40", grid, ["naive"], seeds, whole, jobs=1)
    run_sweep("oscillation-40", grid, ["naive"], seeds, part, jobs=1)
    header, *rows = (part / RUNS_FILE).read_text().splitlines(keepends=True)
    quoted = rows[0].replace(",naive,", ',"naive",')  # quoted where it need not be: the same cells
    (part / RUNS_FILE).write_text(header + rows[4] + rows[2] + quoted)
    run_sweep("oscillation-40", grid, ["naive"], seeds, part, jobs=1)
    assert (part / RUNS_FILE).read_bytes() == (whole / RUNS_FILE).read_bytes()
