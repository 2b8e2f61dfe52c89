"""The source of a policy file a user might write, for tests that run one as ``path.py:Class``."""

from __future__ import annotations


def evicting(class_name: str, name: str, chosen: str = "outputs[:-2]", reason: str = "mask") -> str:
    """A policy that, past the trigger, evicts the tool outputs ``chosen`` picks (a Python expression over
    ``outputs``, the offerable tool outputs oldest first) for ``reason``. It declares no table, so that files of
    it at several paths load in one process."""
    return f'''
from prunesim.policies import Policy
from prunesim.policies.base import Evict


class {class_name}(Policy):
    name = {name!r}
    summary = "evicts {chosen} past the trigger"

    def decide(self, view):
        if view.utilization < self.scenario.trigger:
            return []
        outputs = [s.id for s in view.spans if s.kind == "tool_output" and s.offerable]
        chosen = tuple({chosen})
        return [Evict(chosen, reason={reason!r})] if chosen else []
'''
