"""A policy in one file, used as ``--policy examples/policies/keep_last_outputs.py:KeepLastOutputs``.

Observation masking, as some agent runtimes do it: once utilization reaches the
trigger, drop every tool output except the ``[keep_last] outputs`` most recent
ones. It asks no model, so it pays no decision tokens; its evictions are
non-model evictions. Its table, ``[keep_last]``, is set like any other:
``--set keep_last.outputs=3``.
"""

from __future__ import annotations

from dataclasses import dataclass

from prunesim.policies import Policy
from prunesim.policies.base import Evict


@dataclass
class KeepLast:
    """``[keep_last]``: how many of the most recent tool outputs stay."""

    outputs: int = 5

    def check(self, key, where, scenario):
        if self.outputs < 0:
            from prunesim.errors import UserError

            raise UserError(where, f"{key}.outputs", f"must not be negative (got {self.outputs})")


class KeepLastOutputs(Policy):
    name = "keep-last-outputs"
    summary = "drops all but the most recent tool outputs once utilization reaches the trigger"
    tables = {"keep_last": KeepLast}

    def decide(self, view):
        if view.utilization < self.scenario.trigger:
            return []
        outputs = [s.id for s in view.spans if s.kind == "tool_output" and s.offerable]
        keep = self.scenario.keep_last.outputs
        old = outputs[:-keep] if keep else outputs
        return [Evict(tuple(old), reason="mask")] if old else []
