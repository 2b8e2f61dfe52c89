"""The outcome files of The Complexity Trap (third-party data, read where they are): the harness against the
issue's figures, and the shipped fit's provenance. Skipped, with the reason, when the files are absent."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
from prunesim.io import outcomes
from prunesim.studies import outcome_validate as validate
from prunesim.studies.outcome_arms import FIGURES, figures, pairs

ROOT = Path(__file__).resolve().parents[1]
FOLDER = Path(os.environ.get("PRUNESIM_OUTCOMES") or ROOT.parent / "shared" / "outcomes")
FILES = [FOLDER / "sweagent.csv", FOLDER / "openhands.csv"]
pytestmark = pytest.mark.skipif(not all(f.is_file() for f in FILES),
                                reason=f"needs the outcome files ({FOLDER} is missing them): set PRUNESIM_OUTCOMES "
                                       "to their folder, or put it at ../shared/outcomes beside the checkout")


def null_errors(common: bool) -> dict[str, float]:
    found = pairs([a for f in outcomes.read_all(FILES) for a in f.arms])
    rows = []
    for p in found:
        raw, arm = p.raw, p.arm
        if common:
            ri, ai = p.common()
            raw, arm = raw.subset(ri), arm.subset(ai)
        r, a = figures(raw, p.kind.scaffold), figures(arm, p.kind.scaffold)
        rows.append([validate.error(f, r[f], a[f], r[f]) for f in FIGURES])
    assert len(found) == 13  # the 13 policy arms of the dev files
    return dict(zip(FIGURES, np.mean(rows, axis=0), strict=True))


def test_the_null_is_off_by_what_the_issue_says():
    """Issue 36: over the 13 policy arms the null is off by 3.7 points of solve rate, 0.59 of the median-turns
    ratio, 0.47 of the total-cost ratio and 13 points of capped share. On every row, with failed starts unsolved
    and SWE-agent's summary calls counted toward its cap (docs/outcomes.md): 3.79, 0.592, 0.470, 12.42."""
    every, both = null_errors(False), null_errors(True)
    assert round(both["solve_rate"], 1) in (3.7, 3.8) and round(every["solve_rate"], 1) == 3.8
    assert round(every["median_turns"], 2) == 0.59 and round(every["total_cost"], 2) == 0.47
    assert 12.0 <= every["capped_share"] < 13.0


def test_the_shipped_fit_names_these_files_by_their_digests():
    fit = json.loads((ROOT / "sim" / "model" / "agent_fit.json").read_text())
    for f in FILES:
        assert fit["inputs"][f.name] == hashlib.sha256(f.read_bytes()).hexdigest()
    assert fit["outcomes"]["openhands"]["arms"] and fit["outcomes"]["swe-agent"]["arms"]
