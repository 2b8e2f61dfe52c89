"""Aggregation: medians, means and bootstrap intervals, deterministic and safe with infinities."""

import csv
import math

import numpy as np
import pytest
from prunesim.cli import main
from prunesim.studies.aggregate import (
    AGGREGATE_FILE,
    _ci_sorted,
    _median,
    _sorted_resamples,
    aggregate,
    median_ci,
    write_aggregate,
)
from prunesim.studies.sweep import run_sweep

INF = math.inf


def gen(seed=0):
    return np.random.Generator(np.random.PCG64(seed))


def test_the_sorted_resample_shortcut_is_the_median_of_each_resample():
    x = np.sort(gen(1).lognormal(0, 1, 25))
    idx = gen(2).integers(0, 25, size=(500, 25))
    direct = np.median(x[idx], axis=1)
    ordered = np.sort(idx, axis=1)
    lo, hi = x[ordered[:, 12]], x[ordered[:, 12]]
    assert np.array_equal(direct, (lo + hi) / 2)
    # And for an even count, through the module's own function.
    y = np.sort(gen(3).normal(size=10))
    idx = _sorted_resamples(gen(4), 10, 400)
    low, high = _ci_sorted(y, idx, 0.95)
    medians = np.sort(np.median(y[idx], axis=1))
    assert (low, high) == (medians[9], medians[389])  # inverted-CDF order statistics, no interpolation


def test_the_interval_is_deterministic_and_holds_the_median():
    values = gen(5).normal(100, 15, 60)
    a = median_ci(values, gen(7))
    assert a == median_ci(values, gen(7))
    assert a[0] <= np.median(values) <= a[1] and a[0] < a[1]
    assert median_ci([4.0] * 9, gen(7)) == (4.0, 4.0)


@pytest.mark.parametrize(
    "values, median",
    [([1.0, INF, INF], INF), ([1.0, 2.0, INF], 2.0), ([1.0, INF], INF), ([INF, INF], INF), ([1.0, 3.0], 2.0)],
)
def test_infinities_sort_above_every_finite_value_and_never_make_nan(values, median):
    x = np.sort(np.array(values))
    assert _median(x) == median
    low, high = median_ci(values, gen(0))
    assert not math.isnan(low) and not math.isnan(high) and low <= high


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    out = tmp_path_factory.mktemp("agg") / "s"
    grid = {"decision.rationale_per_span": [120.0, 3000.0]}
    run_sweep("oscillation-40", grid, ["naive", "noop"], range(6), out, jobs=1)
    return out


def test_one_row_per_policy_grid_point_and_numeric_metric(swept):
    table = aggregate(swept)
    groups = {(r["policy"], r["decision.rationale_per_span"]) for r in table}
    assert groups == {("naive", 120.0), ("naive", 3000.0), ("noop", 120.0), ("noop", 3000.0)}
    assert all(r["n"] == 6 for r in table)
    metrics = {r["metric"] for r in table}
    assert {"passes", "overhead_ratio", "oscillating", "summary.turns"} - metrics == {"summary.turns"}
    assert "run_id" not in metrics and "seed" not in metrics
    for r in table:
        assert r["ci_low"] <= r["median"] <= r["ci_high"]


def test_infinite_overhead_ratios_aggregate_to_inf(swept):
    by = {(r["policy"], r["decision.rationale_per_span"], r["metric"]): r for r in aggregate(swept)}
    hopeless = by[("naive", 3000.0, "overhead_ratio")]  # no pass can pay for a 3000-token rationale
    assert hopeless["median"] == INF and hopeless["mean"] == INF and hopeless["ci_high"] == INF
    assert by[("noop", 120.0, "passes")]["median"] == 0
    share = by[("naive", 120.0, "oscillating")]["mean"]
    assert 0 <= share <= 1  # booleans count as 0/1


def test_a_yes_no_metric_gets_its_share_with_a_wilson_interval(swept):
    from prunesim.observe.metrics.intervals import wilson

    for r in aggregate(swept):
        if r["metric"] in ("oscillating", "osc_tight_band"):
            assert r["share"] == pytest.approx(r["mean"])
            assert (r["share_low"], r["share_high"]) == wilson(round(r["share"] * r["n"]), r["n"])
            assert r["share_low"] <= r["share"] <= r["share_high"]
        elif r["metric"] == "passes":
            assert r["share"] is None and r["share_low"] is None

def test_aggregate_csv_is_deterministic_and_loads_in_pandas(swept, capsys):
    assert main(["aggregate", str(swept)]) == 0
    first = (swept / AGGREGATE_FILE).read_bytes()
    assert main(["aggregate", str(swept)]) == 0
    assert (swept / AGGREGATE_FILE).read_bytes() == first
    with open(swept / AGGREGATE_FILE, newline="") as fh:
        header = next(csv.reader(fh))
    assert header == ["policy", "decision.rationale_per_span", "metric", "n", "median", "mean", "ci_low", "ci_high",
                      "share", "share_low", "share_high"]
    assert b",inf," in first
    pd = pytest.importorskip("pandas", reason="needs pandas: pip install '.[test]'")
    frame = pd.read_csv(swept / AGGREGATE_FILE)
    assert frame["median"].dtype == float and np.isinf(frame["median"]).any()


def test_the_bootstrap_seed_moves_only_the_interval(swept):
    a, b = aggregate(swept, seed=0), aggregate(swept, seed=1)
    assert [(r["median"], r["mean"], r["n"]) for r in a] == [(r["median"], r["mean"], r["n"]) for r in b]
    assert aggregate(swept, seed=1) == b
    values = gen(5).normal(100, 15, 60)
    assert median_ci(values, gen(1)) != median_ci(values, gen(2))


def test_json_output_and_errors(swept, tmp_path, capsys):
    assert main(["aggregate", str(swept), "--json"]) == 0
    out = capsys.readouterr().out
    assert '"inf"' in out and '"metric": "passes"' in out
    assert main(["aggregate", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err
    assert "not a sweep directory" in err and err.count("\n") == 1


def test_write_aggregate_leaves_no_temporary_files(swept):
    write_aggregate(swept, aggregate(swept))
    assert not [p for p in swept.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("which", [0, 1, -1])
def test_an_aggregate_csv_with_a_group_row_twice_is_not_drawn(swept, tmp_path, capsys, which):
    """Any row written twice (another median in the copy): the figure and the report fall back to runs.csv."""
    import shutil

    from prunesim.plots.io import read_sweep
    from prunesim.plots.sweep import curves

    folder = tmp_path / "sweep"
    shutil.copytree(swept, folder)
    assert main(["aggregate", str(folder), "--resamples", "100"]) == 0
    lines = (folder / AGGREGATE_FILE).read_text().splitlines(keepends=True)
    header = next(csv.reader([lines[0]]))
    cells = next(csv.reader([lines[1:][which]]))
    cells[header.index("median")] = "123456"  # the copy holds another figure
    copy = ",".join(cells) + "\n"
    (folder / AGGREGATE_FILE).write_text("".join([*lines, copy]))
    capsys.readouterr()
    sweep = read_sweep(folder)
    assert sweep.aggregate is None
    note = capsys.readouterr().err.strip()
    assert note.startswith(f"prunesim: note: {folder / AGGREGATE_FILE} repeats the row of {cells[0]}, ")
    assert note.endswith("the figure is computed from runs.csv (prunesim aggregate refreshes it)")
    metric = cells[1 + len(sweep.grid)]
    if metric in sweep.runs[0] and isinstance(sweep.runs[0][metric], (int, float)):
        assert curves(sweep, metric, next(iter(sweep.grid)))[1].startswith("runs.csv")
