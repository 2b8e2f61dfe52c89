"""Success: the chance that a run still solves its task, from what the run observably did.

A run that stopped at its turn cap solves with ``cap_success_solved`` when its
base solved and ``cap_success_unsolved`` when it did not (the engine picks one
and passes it here as ``cap_success``). Otherwise the chance depends on the run's base outcome (the outcome it
would have had without the policy: a replay's is "the recorded run solved it")
and on how much the policy lengthened it, ``L = log(agent calls / work turns)``:

* base solved: ``1 - (1 - base_rate) * discordance * exp(lengthening_slope * L)``
* base unsolved: ``base_rate * discordance * exp(-lengthening_slope * L)``

each clipped to [0, 1]. ``discordance`` is how often a re-run of the same agent
on the same task changes its outcome. At ``L = 0`` over runs whose bases
solve at rate ``base_rate`` the expected solve rate is ``base_rate`` itself:
with no effect of the policy, no effect on success (the null the model must
keep). Lengthened runs lose solved tasks and rescue fewer unsolved ones.

The evidence. Paired on instances of the Complexity Trap study
(``../shared/outcomes``): among runs the raw arm solved and the policy's arm
did not cap, 0.61-0.63 still solved under OpenHands masking that lengthened
runs (M = 10, 29), 0.75-0.8 under the settings that did not; runs at the cap
solved about 0.1. The parameters are fitted on those pairs where the data
supports them (:mod:`prunesim.model.agent_profiles` says which).
"""

from __future__ import annotations

import math


def probability(base_rate: float, discordance: float, cap_success: float, slope: float, capped: bool,
                lengthening: float, base: str = "solved") -> float:
    """P(solved) of one run (module docstring)."""
    if capped:
        return cap_success
    if base == "solved":
        p = 1.0 - (1.0 - base_rate) * discordance * math.exp(slope * lengthening)
    else:
        p = base_rate * discordance * math.exp(-slope * lengthening)
    return min(1.0, max(0.0, p))


def lengthening(agent_calls: int, work_turns: int) -> float:
    """``L = log(agent calls / work turns)`` (0 for a run with no work turn)."""
    return math.log(agent_calls / work_turns) if work_turns and agent_calls else 0.0
