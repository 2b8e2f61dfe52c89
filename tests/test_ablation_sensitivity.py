"""`prunesim ablation` and `prunesim sensitivity` on a few seeds: their tables, their files, their refusals."""

import csv

import pytest
from prunesim.cli import main
from prunesim.io import scenario_files as sc
from prunesim.studies import ablation, sensitivity
from prunesim.studies.replay import OSCILLATION


def test_the_ablation_refits_and_judges_every_combination(tmp_path, capsys):
    out = tmp_path / "ablation.csv"
    argv = ["ablation", "oscillation", "--seeds", "0:3", "--max-evals", "3", "--blocks", "1", "--block-size", "3",
            "--params", "decision.rationale_per_span", "--quiet", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert all(label in printed for label in ("neither", "early outputs", "turn unit", "early outputs + turn unit"))
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    judged = sum(f.judged for f in OSCILLATION.figures) + len(OSCILLATION.targets().contrasts)
    assert len(rows) == 4 * judged and set(rows[0]) == set(ablation.COLUMNS)
    assert main(argv) == 2  # the file exists: nothing replaced without --force
    assert "exists" in capsys.readouterr().err


def test_the_ablation_refuses_overlapping_seeds_and_a_scenario_without_the_mechanisms(oscillation):
    with pytest.raises(Exception, match="overlap"):
        ablation.ablation(OSCILLATION, oscillation, range(0, 5), 3, 1, 5, 2)
    off = sc.replace(oscillation, {"workload.turn_unit": False})
    with pytest.raises(Exception, match="off in this scenario"):
        ablation.ablation(OSCILLATION, off, range(0, 3), 3, 1, 3, 1000)


def test_sobol_indices_are_zero_for_a_parameter_a_policy_never_reads(oscillation):
    pytest.importorskip("SALib")
    result = sensitivity.sensitivity(OSCILLATION, oscillation, range(0, 2), 2,
                                     ["decision.rationale_per_span", "gate.lead"])
    assert result.points == 2 * (2 + 2)
    by = {(f.target.variant, f.target.metric): f for f in result.figures}
    # naive never reads [gate]: its figures cannot depend on gate.lead
    for (variant, _), f in by.items():
        if variant.startswith("naive"):
            assert f.st["gate.lead"] == 0 and f.s1["gate.lead"] == 0
    assert by[("naive @22k", "mean_rationale_tokens")].st["decision.rationale_per_span"] > 0.5
    assert len(sensitivity.rows(result)) == 2 * len(result.figures)
    again = sensitivity.sensitivity(OSCILLATION, oscillation, range(0, 2), 2,
                                    ["decision.rationale_per_span", "gate.lead"])
    assert sensitivity.rows(again) == sensitivity.rows(result)  # the bootstrap's half-widths too


@pytest.mark.parametrize("argv, words", [
    (["--samples", "3"], "power of 2"),
    (["--params", "workload.nope"], "no such scenario parameter"),
])
def test_sensitivity_refuses_bad_flags_in_one_line(argv, words, capsys):
    assert main(["sensitivity", "oscillation", "--seeds", "0:2", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1
