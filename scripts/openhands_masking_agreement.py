"""prunesim's observation-masking:openhands beside OpenHands 0.43's own condenser and prompt builder, call by call.

OpenHands is not a dependency of prunesim (openhands-ai 0.43.0 needs Python 3.12 and some 600 packages): run this
in a venv of its own that has both (``pip install openhands-ai==0.43.0 simpy``, then ``pip install --no-deps -e .``):

    python scripts/openhands_masking_agreement.py [TRACES]

For each OpenHands run in ``TRACES/openhands`` (default ../shared/traces) and each attention window M in 2, 5, 10
and 29, before every model call k it builds OpenHands' own view of the recorded events up to that call, masks it
with ``ObservationMaskingCondenser(attention_window=M)`` and turns it into the prompt with ``ConversationMemory``;
prunesim replays the first k - 1 turns of the same transcript under ``observation-masking:openhands`` with
``observation_masking.n = M``. A call agrees when the same turns' assistant messages (thought and tool calls) are
in the prompt, the same turns' outputs are whole, and as many outputs are masked.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
logging.disable(logging.WARNING)

import numpy as np  # noqa: E402
import openhands.agenthub.codeact_agent as codeact  # noqa: E402
from openhands.core.config import AgentConfig  # noqa: E402
from openhands.events.action import Action, MessageAction  # noqa: E402
from openhands.events.serialization import event_from_dict  # noqa: E402
from openhands.memory.condenser.impl.observation_masking_condenser import ObservationMaskingCondenser  # noqa: E402
from openhands.memory.conversation_memory import ConversationMemory  # noqa: E402
from openhands.memory.view import View  # noqa: E402
from openhands.utils.prompt import PromptManager  # noqa: E402
from prunesim.io import scenario_files as sc  # noqa: E402
from prunesim.io.transcripts import formats  # noqa: E402
from prunesim.io.transcripts.workload import TranscriptWorkload, WorkloadData, from_transcript  # noqa: E402
from prunesim.model.engine import Engine  # noqa: E402
from prunesim.model.spans import PLACEHOLDER_OF  # noqa: E402
from prunesim.policies import get_policy  # noqa: E402

WINDOWS = (2, 5, 10, 29)
SKIPPED = ("system", "recall", "change_agent_state", "null")  # not the model's actions (as prunesim's importer)
MEMORY = ConversationMemory(AgentConfig(), PromptManager(os.path.join(os.path.dirname(codeact.__file__), "prompts")))


def openhands_calls(history: list[dict], window: int) -> list[tuple]:
    """Per model call from the second: (turns whose action the prompt holds, turns whose output is whole, masked)."""
    events = [event_from_dict(e) for e in history]
    turn_of: dict[int, int] = {}  # action event id -> its model call
    starts, last = [], None
    for i, ev in enumerate(history):
        if "action" in ev and ev.get("source") != "user" and ev["action"] not in SKIPPED:
            meta = ev.get("tool_call_metadata") or {}
            response = (meta.get("model_response") or {}).get("id") or f"event-{ev.get('id')}"
            if response != last:
                starts.append(i)
                last = response
            turn_of[ev["id"]] = len(starts)
    first = next(e for e in events if isinstance(e, MessageAction))
    out = []
    for start in starts[1:]:
        view = View.from_events(events[:start])
        masked = ObservationMaskingCondenser(attention_window=window).condense(view)
        messages = MEMORY.process_events(list(masked.events), first)
        ids = {e.tool_call_metadata.tool_call_id: turn_of[e.id] for e in events[:start]
               if isinstance(e, Action) and e.tool_call_metadata is not None and e.id in turn_of}
        acted = {ids[c.id] for m in messages for c in (m.tool_calls or ()) if c.id in ids}
        whole = {ids[m.tool_call_id] for m in messages if m.role == "tool" and m.tool_call_id in ids}
        count = sum(new is not old and getattr(old, "cause", None) in turn_of
                    for old, new in zip(view.events, masked.events, strict=True))
        out.append((acted, whole, count))
    return out


def prunesim_calls(path: Path, window: int) -> list[tuple]:
    data = from_transcript(next(formats.iter_transcripts(path)), "pieces")
    out = []
    for k in range(2, data.header["turns"] + 1):
        parts = [p for p in data.parts if p["turn"] < k]
        scenario = sc.load("transcript", {"turns": k - 1, "observation_masking.n": window})
        policy = get_policy("observation-masking:openhands")(scenario, np.random.default_rng(0))
        engine = Engine(scenario, policy, TranscriptWorkload(WorkloadData({**data.header, "turns": k - 1}, parts)))
        engine.run()
        spans = engine.window.spans()
        acted = {s.turn for s in spans if s.kind == "tool_call"}
        whole = {s.turn for s in spans if s.kind == "tool_output"}
        out.append((acted, whole, sum(PLACEHOLDER_OF + "tool_output" in s.tags and s.tokens > 0 for s in spans)))
    return out


def main() -> None:
    traces = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared" / "traces"
    lines = (traces / "openhands" / "multi_swe_bench_output.jsonl").read_text().splitlines()
    total = agree = 0
    with tempfile.TemporaryDirectory() as work:
        for window in WINDOWS:
            for n, line in enumerate(lines):
                one = Path(work) / f"run{n}.jsonl"
                one.write_text(line + "\n")
                theirs, ours = openhands_calls(json.loads(line)["history"], window), prunesim_calls(one, window)
                same = sum(t == o for t, o in zip(theirs, ours, strict=True))
                total, agree = total + len(theirs), agree + same
                print(f"M={window:<3} run {n}: {same} of {len(theirs)} calls agree; masked before the last call: "
                      f"OpenHands {theirs[-1][2]}, prunesim {ours[-1][2]}")
    print(f"all: {agree} of {total} calls agree")


if __name__ == "__main__":
    main()
