"""Names are drawn as typed: a scenario, transcript or policy named with $ signs never turns a figure into math.

matplotlib reads text between two $ as mathtext: ``a$x$b`` would be drawn as an italic x, and
``a$\\frac$b`` fails to parse. Every figure (trace, ledger, break-even, sweep, phase, pareto, cdf, the
report's) draws the name as it is.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_capture import cli
from matplotlib.text import Text
from prunesim.plots import style
from prunesim.plots.io import read_run
from prunesim.plots.trace import trace_figure

ROOT = Path(__file__).resolve().parents[1]
NAME = r"a$\frac$b $x^{2$ \$ $$"  # a bad command, an unclosed brace, an escaped sign and an empty pair


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("dollars")
    scenario = root / f"{NAME}.toml"
    shutil.copy(ROOT / "scenarios" / "oscillation-40.toml", scenario)
    out = {"scenario": scenario, "naive": root / "naive", "gated": root / "gated", "sweep": root / "sweep",
           "board": root / "board"}
    for argv in (
        ("run", scenario, "--policy", "naive", "--set", "turns=30", "--out", out["naive"]),
        ("run", scenario, "--policy", "slack-gated", "--set", "turns=30", "--out", out["gated"]),
        ("sweep", scenario, "--grid", "trigger=20000,22000", "--grid", "budget=23000,24000", "--policies", "naive",
         "--seeds", "0:2", "--set", "turns=20", "--jobs", "1", "--quiet", "--out", out["sweep"]),
        ("leaderboard", "--scenario", scenario, "--seeds", "0:2", "--set", "turns=20", "--policies", "noop,naive",
         "--out", out["board"]),
    ):
        code, _, err = cli(*argv)
        assert code == 0, err
    return out


@pytest.mark.parametrize("figure", ["trace", "ledger", "breakeven", "sweep", "phase", "pareto", "cdf", "report"])
def test_every_figure_draws_a_name_with_dollar_signs(made, tmp_path, figure):
    argv = {
        "trace": ("plot", "trace", made["naive"], made["gated"]),
        "ledger": ("plot", "ledger", made["naive"]),
        "breakeven": ("plot", "breakeven", made["naive"], made["gated"]),
        "sweep": ("plot", "sweep", made["sweep"], "--metric", "passes", "--x", "trigger"),
        "phase": ("plot", "phase", made["sweep"], "--x", "trigger", "--y", "budget", "--metric", "passes"),
        "pareto": ("plot", "pareto", made["board"], "--y", "peak_utilization"),
        "cdf": ("plot", "cdf", made["board"], "--metric", "input_ratio"),
        "report": ("report", made["naive"], made["sweep"], made["board"]),
    }[figure]
    suffix = ".html" if figure == "report" else ".png"
    code, _, err = cli(*argv, "--out", tmp_path / f"{figure}{suffix}")
    assert code == 0 and err.count("internal error") == 0, err
    assert (tmp_path / f"{figure}{suffix}").stat().st_size > 1000


def test_the_name_is_drawn_as_typed_not_as_math(made):
    fig = trace_figure([read_run(made["naive"])])
    style.render(fig, "svg")
    texts = fig.findobj(Text)
    assert any(NAME in t.get_text() for t in texts)
    assert not any(t.get_parse_math() for t in texts)
