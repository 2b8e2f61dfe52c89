"""Validation on seeds never used for fitting: blocks of seeds, and independent ranges of blocks.

A replay's figures are judged on ``blocks`` consecutive blocks of
``block_size`` seeds from ``first_seed`` on: one *range* (1,000 seeds by
default). For each figure, the block's statistic (median, or share of runs for
a yes/no, or a contrast's paired difference) is compared with the figure's
accepted range (the rule of :mod:`prunesim.studies.targets`); in a block the
figure is *counted* when it is in range and, as in a replay, tells the seed's
settings apart and is specific where it is a verdict
(:func:`prunesim.studies.replay.judge`). A figure *holds* in a range when it
is counted in all blocks but at most ``allowed_misses`` (1 of 10 by default).

One range may be lucky: with ``ranges`` > 1 the same judgement runs on that
many independent ranges, one after another from ``first_seed``, and a figure
*holds overall* only when it holds in most of them (more than half). The goal
of seed 000's replication is each figure holding that way on ranges of seeds
1000 and up, which the shipped scenario was never fitted on.
"""

from __future__ import annotations

from dataclasses import dataclass

from prunesim.kernel.choice import EngineChoice
from prunesim.model.scenario import Scenario
from prunesim.studies import ranges
from prunesim.studies.ranges import RangeRecord
from prunesim.studies.replay import FigureReplay, judge


@dataclass
class FigureValidation:
    target: object  # a targets.Target or targets.Contrast
    key: str  # its name in a ranges record
    statistics: list[float]  # one per block of the first range
    in_range: list[bool]
    counted_blocks: list[bool]  # in range, discriminating and specific (a contrast: in range with its interval)
    held: list[bool]  # per range: counted in all blocks but at most allowed_misses

    @property
    def share(self) -> float:
        return sum(self.in_range) / len(self.in_range)

    @property
    def misses(self) -> int:
        """Blocks of the first range in which it was not counted."""
        return len(self.counted_blocks) - sum(self.counted_blocks)

    @property
    def holds(self) -> bool:
        return ranges.most(sum(self.held), len(self.held))


@dataclass
class Validation:
    name: str
    scenario: str
    blocks: list[list[int]]  # the first range's
    figures: list[FigureValidation]
    allowed_misses: int
    ranges: list[list[int]]  # [first seed, end) of each range

    @property
    def failing(self) -> list[FigureValidation]:
        return [f for f in self.figures if f.target.judged and not f.holds]

    @property
    def ok(self) -> bool:
        return not self.failing

    def record(self, fingerprint: str, command: str | None) -> RangeRecord:
        return RangeRecord(self.name, self.scenario, fingerprint, command, len(self.blocks), len(self.blocks[0]),
                           self.allowed_misses, self.ranges, {f.key: f.held for f in self.figures if f.target.judged})

    def as_dict(self) -> dict:
        return {
            "validate": self.name,
            "scenario": self.scenario,
            "blocks": [[b[0], b[-1] + 1] for b in self.blocks],
            "ranges": self.ranges,
            "allowed_misses": self.allowed_misses,
            "all_ok": self.ok,
            "figures": [
                {"variant": f.target.variant, "figure": f.target.label, "metric": f.target.metric,
                 "against": getattr(f.target, "against", "") or None, "contrast": not hasattr(f.target, "fit"),
                 "published": f.target.published, "judged": f.target.judged,
                 "accepted": [f.target.low, f.target.high] if f.target.judged else None,
                 "per_block": f.statistics, "in_range": f.in_range, "share_in_range": f.share,
                 "counted": f.counted_blocks, "held_per_range": f.held, "ranges_held": sum(f.held),
                 "holds": f.holds}
                for f in self.figures
            ],
        }


def validate(replay: FigureReplay, blocks: int, block_size: int, first_seed: int,
             allowed_misses: int | None = None, base: Scenario | None = None,
             engine: EngineChoice | None = None, n_ranges: int = 1) -> Validation:
    """Run ``replay`` on each block of each of ``n_ranges`` ranges; ``allowed_misses`` defaults to a tenth of the
    blocks (rounded down).

    ``base`` replaces the replay's shipped scenario (an ablation judges refitted ones); ``engine`` runs them.
    """
    allowed = blocks // 10 if allowed_misses is None else allowed_misses
    size = blocks * block_size
    scenario = ""
    judged_ranges = []
    for r in range(n_ranges):
        start = first_seed + r * size
        per_block = []
        for i in range(blocks):
            seeds = list(range(start + i * block_size, start + (i + 1) * block_size))
            targets, runs = replay.run_variants(seeds, base, engine)
            scenario = targets.scenario
            figures, contrasts = judge(targets, runs, replay.specificity(seeds, targets, base))
            per_block.append(figures + contrasts)
        judged_ranges.append(per_block)
    first = judged_ranges[0]
    out = []
    for j, result in enumerate(first[0]):
        stat = [b[j].median if hasattr(b[j], "figure") else b[j].difference for b in first]
        held = [sum(not b[j].counted for b in per_block) <= allowed for per_block in judged_ranges]
        out.append(FigureValidation(getattr(result, "figure", None) or result.contrast, ranges.key(result), stat,
                                    [b[j].ok for b in first], [b[j].counted for b in first], held))
    first_blocks = [list(range(first_seed + i * block_size, first_seed + (i + 1) * block_size))
                    for i in range(blocks)]
    spans = [[first_seed + r * size, first_seed + (r + 1) * size] for r in range(n_ranges)]
    return Validation(replay.name, scenario, first_blocks, out, allowed, spans)
