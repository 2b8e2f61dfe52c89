"""Small outcome files and fits for the tests of the outcome forecast (no third-party data needed)."""

from __future__ import annotations

import numpy as np
from prunesim.studies.agent_fit import AgentFit, ScaffoldFit
from prunesim.studies.outcome_fit import Params

OH_HEAD = ("experiment,instance_id,cost,summary_cost,has_summary,summary_count,turn_count,mean_reasoning_tokens,"
           "mean_completion_tokens,mean_prompt_tokens,outcome")
RAW = "toy_maxiter_250-raw_agent-run_1"


def raw_rows(n: int = 12, seed: int = 0, experiment: str = RAW, failed: int = 1) -> list[str]:
    """An OpenHands-like raw arm: turns from 3 to ~60, prompts growing 500 a turn from a 3,000 base, costs at
    0.3 and 2.5 per million; the first ``failed`` rows failed to start."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        if i < failed:
            rows.append(f"{experiment},inst-{i},0,0,False,0,1,0,0,0,0")
            continue
        turns = int(rng.integers(3, 60))
        prompt = 3000 + 500 * (turns - 1) / 2
        completion, reasoning = 80, 20
        cost = turns * (prompt * 0.3e-6 + (completion + reasoning) * 2.5e-6)
        rows.append(f"{experiment},inst-{i},{cost:.6f},0,False,0,{turns},{reasoning},{completion},{prompt:.0f},"
                    f"{int(rng.random() < 0.4)}")
    return rows


def toy_file(tmp_path, n: int = 12, extra: list[str] = (), name: str = "toy.csv"):
    path = tmp_path / name
    path.write_text("\n".join([OH_HEAD, *raw_rows(n), *extra]) + "\n", encoding="utf-8")
    return path


def toy_fit(rate: float = 1.0, cv: float = 1.0, decay: float = 7.0, fidelity: float | None = 0.33,
            replicates: int = 4) -> AgentFit:
    """A fit with chosen values (its replicates spread around them), for the forecast's tests."""
    def params(r):
        return Params(r, cv, decay, fidelity, 0.3, 0.08, 0.45, 0.5)

    reps = [params(rate * f) for f in np.linspace(0.6, 1.5, replicates)]
    return AgentFit({"openhands": ScaffoldFit(params(rate), reps, [RAW], 3000)}, {"toy.csv": "0" * 64},
                    replicates, 0, "toy fit")
