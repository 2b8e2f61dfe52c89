"""Block luck: which figures hold in most independent ranges of seeds, as a record a replay can read.

One range of seeds (1,000 by default: ten blocks of 100) says whether a figure holds by the rule of
:mod:`prunesim.studies.validate` (in range, and counted, in all blocks but at most one tenth). A figure that
holds in one range may do so by the luck of that range: ``prunesim validate --ranges N`` judges it on ``N``
independent ranges, one after another, and ``--out FILE`` keeps the result as a *ranges record*. A replay's
headline counts a figure as holding only where the record says it holds in most ranges.

A record belongs to the model, scenario and targets it was made with. Its *fingerprint* is a digest of the
targets (every figure, contrast, range and the specificity margin) and of the summaries, on a few seeds
(:data:`FINGERPRINT_SEEDS`), of every variant and of the specificity nulls: the figures' metrics only, so that
a metric added elsewhere leaves it as it was while any change of what the figures measure makes it stale. A
replay whose fingerprint differs says the record is stale and counts nothing from it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path

from prunesim.errors import UserError
from prunesim.io import inputs
from prunesim.io.atomic import json_ready
from prunesim.model.scenario import Scenario
from prunesim.studies import specificity

FINGERPRINT_SEEDS = range(0, 5)  # calibration seeds: no judged figure is computed on them
FORMAT = 1
SUFFIX = ".ranges.json"


def key(result) -> str:
    """The name a figure or contrast goes by in a record: its variant and label."""
    if hasattr(result, "figure"):
        return f"{result.figure.variant}: {result.figure.label}"
    return f"contrast {result.contrast.variant} - {result.contrast.against}: {result.contrast.label}"


@dataclass
class RangeRecord:
    replay: str
    scenario: str
    fingerprint: str
    command: list | str | None  # the command line that wrote it
    blocks: int
    block_size: int
    allowed_misses: int
    ranges: list[list[int]]  # [first seed, end) of each
    holds: dict[str, list[bool]]  # figure key -> whether it held in each range
    source: str = field(default="", compare=False)

    def as_dict(self) -> dict:
        out = asdict(self)
        del out["source"]
        return {"kind": "ranges", "format": FORMAT, **out}


@dataclass
class RangeCheck:
    """What a record says of a replay's figures, once its fingerprint is checked."""

    source: str
    current: bool
    ranges: int
    holds: dict[str, list[bool]]

    def held(self, name: str) -> tuple[int, int] | None:
        """(ranges in which the figure held, ranges judged); None when the record has no word on it."""
        if not self.current or name not in self.holds:
            return None
        return sum(self.holds[name]), len(self.holds[name])

    def in_most(self, name: str) -> bool:
        held = self.held(name)
        return held is not None and most(*held)

    def as_dict(self) -> dict:
        return {"record": self.source, "current": self.current, "ranges": self.ranges,
                "held": {k: [sum(v), len(v)] for k, v in self.holds.items()} if self.current else None}


def fingerprint(replay, base: Scenario | None = None) -> str:
    """The digest of what the figures of ``replay`` are computed from (module docstring)."""
    targets = replay.targets(base)
    seeds = list(FINGERPRINT_SEEDS)
    _, runs = replay.run_variants(seeds, base)
    spec = replay.specificity(seeds, targets, base)
    metrics = sorted({f.metric for f in targets.figures} | {c.metric for c in targets.contrasts}
                     | {"oscillating", "osc_keeps_pruning", "osc_tight_band", "osc_rate_holds",
                        "osc_overhead_above_net", "pass_trend", "pinned_under"})
    measured = {label: [[s.get(m) for m in metrics] for s in summaries] for label, summaries in sorted(runs.items())}
    if spec is not None:
        measured.update({f"null: {n}": [[s.get(m) for m in metrics] for s in rows]
                         for n, rows in spec.null_runs.items()})
    definition = {"figures": [asdict(f) for f in targets.figures], "contrasts": [asdict(c) for c in targets.contrasts],
                  "variants": [[v.label, v.policy, sorted((v.overrides or {}).items())] for v in targets.variants],
                  "specificity_margin": specificity.MARGIN, "metrics": metrics, "measured": measured}
    blob = json.dumps(json_ready(definition), sort_keys=True, default=repr).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


FIELDS = {"replay": str, "scenario": str, "fingerprint": str, "command": (list, str, type(None)), "blocks": int,
          "block_size": int, "allowed_misses": int, "ranges": list, "holds": dict}


def read(path: Path) -> RangeRecord:
    """A ranges record; a malformed one is a :class:`UserError` naming the file and what is wrong."""
    where = str(path)
    problem = inputs.problem(path, "ranges record")
    if problem:
        raise UserError(where, None, problem)
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UserError(where, None, f"not a ranges record ({e})") from None
    if not isinstance(data, dict) or data.get("kind") != "ranges" or data.get("format") != FORMAT:
        raise UserError(where, None, f"not a ranges record of format {FORMAT}")
    fields = {k: v for k, v in data.items() if k not in ("kind", "format")}
    for name, kind in FIELDS.items():
        if name not in fields:
            raise UserError(where, name, "missing")
        if not isinstance(fields[name], kind) or isinstance(fields[name], bool):
            raise UserError(where, name, f"has the wrong type ({type(fields[name]).__name__})")
    extra = sorted(set(fields) - set(FIELDS))
    if extra:
        raise UserError(where, extra[0], f"unknown key (known: {', '.join(FIELDS)})")
    spans = fields["ranges"]
    if not spans or not all(isinstance(r, list) and len(r) == 2 and all(type(x) is int for x in r) for r in spans):
        raise UserError(where, "ranges", "must be a list of [first seed, end] pairs")
    for name, held in fields["holds"].items():
        if not isinstance(held, list) or len(held) != len(spans) or not all(isinstance(x, bool) for x in held):
            raise UserError(where, f"holds.{name}", f"must be a list of true/false, one per range ({len(spans)})")
    return RangeRecord(**fields, source=where)


def shipped_path(targets_name: str) -> Path:
    return Path(str(resources.files("prunesim.scenarios").joinpath("targets", targets_name + SUFFIX)))


def shipped(targets_name: str) -> RangeRecord | None:
    """The record shipped beside a targets file, or None."""
    path = shipped_path(targets_name)
    return read(path) if path.is_file() else None


def check(record: RangeRecord, replay, base: Scenario | None = None) -> RangeCheck:
    current = record.replay == replay.name and record.fingerprint == fingerprint(replay, base)
    return RangeCheck(record.source, current, len(record.ranges), record.holds)


def most(held: int, judged: int) -> bool:
    """Whether ``held`` of ``judged`` ranges is most of them (more than half)."""
    return judged > 0 and 2 * held > judged
