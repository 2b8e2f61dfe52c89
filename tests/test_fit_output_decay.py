"""scripts/fit_output_decay.py: the fit behind oscillation-40's early factor recovers what it is given."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "fit_output_decay.py"
TRACES = Path(os.environ.get("PRUNESIM_TRACES") or ROOT.parent / "shared" / "traces")


def load_script():
    spec = importlib.util.spec_from_file_location("fit_output_decay", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_fit_recovers_a_known_decay():
    fit = load_script()
    rng = np.random.default_rng(4)
    runs = []
    for _ in range(300):  # lognormal outputs whose mean follows the formula
        t = np.arange(1, 41, dtype=float)
        mean = fit.mean_at(t, 250.0, 2.0, 5.0)
        y = rng.lognormal(np.log(mean) - 0.5 ** 2 / 2, 0.5)
        runs.append(np.array([t, y]))
    base, early, turns = fit.fit(runs)
    assert base == pytest.approx(250, rel=0.05) and early == pytest.approx(2.0, rel=0.15)
    assert turns == pytest.approx(5.0, rel=0.2)


@pytest.mark.skipif(not (TRACES / "mini-swe-agent-dev").is_dir(), reason="needs ../shared/traces/mini-swe-agent-dev")
def test_the_scenario_records_what_the_script_prints():
    out = subprocess.run([sys.executable, str(SCRIPT), "--traces", str(TRACES)], capture_output=True, text=True,
                         check=True).stdout
    early, turns = re.search(r"\(1 \+ ([0-9.]+) exp\(-\(t - 1\) / ([0-9.]+)\)\)", out).groups()
    text = (ROOT / "scenarios" / "oscillation-40.toml").read_text()
    assert f"tool_output_early = {early} " in text and f"tool_output_early_turns = {turns} " in text
