"""Validation on seeds never used for fitting: blocks of seeds, one median per figure per block.

A replay's figures are judged on ``blocks`` consecutive blocks of
``block_size`` seeds from ``first_seed`` on. For each figure, the block's
statistic (median, or share of runs for a yes/no) is compared with the
figure's accepted range (the rule of :mod:`prunesim.studies.targets`). A figure
*holds* when it misses in at most ``allowed_misses`` blocks (1 of 10 by
default): the goal of seed 000's replication is every figure in range on at
least 9 of 10 blocks of seeds 1000..1999, which the shipped scenario was never
fitted on.
"""

from __future__ import annotations

from dataclasses import dataclass

from prunesim.kernel.choice import EngineChoice
from prunesim.model.scenario import Scenario
from prunesim.studies.replay import FigureReplay, evaluate
from prunesim.studies.targets import Target


@dataclass
class FigureValidation:
    target: Target
    statistics: list[float]  # one per block
    in_range: list[bool]

    @property
    def share(self) -> float:
        return sum(self.in_range) / len(self.in_range)

    @property
    def misses(self) -> int:
        return len(self.in_range) - sum(self.in_range)


@dataclass
class Validation:
    name: str
    scenario: str
    blocks: list[list[int]]
    figures: list[FigureValidation]
    allowed_misses: int

    @property
    def failing(self) -> list[FigureValidation]:
        return [f for f in self.figures if f.target.judged and f.misses > self.allowed_misses]

    @property
    def ok(self) -> bool:
        return not self.failing

    def as_dict(self) -> dict:
        return {
            "validate": self.name,
            "scenario": self.scenario,
            "blocks": [[b[0], b[-1] + 1] for b in self.blocks],
            "allowed_misses": self.allowed_misses,
            "all_ok": self.ok,
            "figures": [
                {"variant": f.target.variant, "figure": f.target.label, "metric": f.target.metric,
                 "published": f.target.published, "judged": f.target.judged,
                 "accepted": [f.target.low, f.target.high] if f.target.judged else None,
                 "per_block": f.statistics, "in_range": f.in_range, "share_in_range": f.share,
                 "holds": f.misses <= self.allowed_misses}
                for f in self.figures
            ],
        }


def validate(replay: FigureReplay, blocks: int, block_size: int, first_seed: int,
             allowed_misses: int | None = None, base: Scenario | None = None,
             engine: EngineChoice | None = None) -> Validation:
    """Run ``replay`` on each block; ``allowed_misses`` defaults to a tenth of the blocks (rounded down).

    ``base`` replaces the replay's shipped scenario (an ablation judges refitted ones); ``engine`` runs them.
    """
    allowed = blocks // 10 if allowed_misses is None else allowed_misses
    seed_blocks = [list(range(first_seed + i * block_size, first_seed + (i + 1) * block_size)) for i in range(blocks)]
    per_block = []
    scenario = ""
    for seeds in seed_blocks:
        targets, runs = replay.run_variants(seeds, base, engine)
        scenario = targets.scenario
        per_block.append({f: evaluate(f, runs[f.variant]) for f in targets.figures if f.variant in runs})
    figures = [
        FigureValidation(f, [b[f].median for b in per_block], [b[f].ok for b in per_block])
        for f in per_block[0]
    ]
    return Validation(replay.name, scenario, seed_blocks, figures, allowed)
