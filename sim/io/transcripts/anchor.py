"""Anchored sizes: part sizes that make the no-op replay send each prompt the API counted.

The calibrated sizes (:mod:`.calibration`) are estimates, a few percent off a
call's recorded prompt count. Where a transcript records those counts, the
parts that entered the prompt between two counted calls share what the
recorded count says they weighed: call ``k``'s *step* holds the parts that
arrived since the last counted call and are still in the prompt, and its
residual (what the count asks for, less what the parts hold) is spread over
them in proportion to their calibrated sizes. A policy that removes a part
then removes its anchored size, and a replay under no policy (with the
runtime's recorded removals) sends exactly the recorded prompts.

The target of a step is the recorded *level*, the call's own count. Where
the step's parts cannot carry that (below), it is the recorded *growth* since
the last counted call, on top of the prompt the replay held there: the error
stays where it arose and the calls after it carry it, as the calibrated sizes
carry theirs, until a later step can take it back within ``MAX_SCALE``. On the
dev sets (the replay identity of ``prunesim fidelity``) the per-run error of
the prompt tokens is then 0.12% at the p90 on Claude Code, 0.17% on
mini-swe-agent and 0.01% on Codex (with the growth alone: 1.08%, 0.69%,
0.56%), and the parts scaled outside [0.5, 2] hold 1.5%, 0.5% and 0.4% of the
tokens (the growth alone: 1.2%, 0.3%, 0.2%): the error taken back is spread
thin.

A step falls back to the calibrated sizes, counted in ``fallbacks``, when no
part arrived to carry the residual, or when anchoring (to the level, then to
the growth) would scale the step's parts by less than ``1 / MAX_SCALE`` or more than ``MAX_SCALE`` (a negative
size among them): the recorded count then moved for a reason the parts do not
hold (the runtime changed its hidden system part, dropped or added content
unseen below the reconciliation's threshold, :mod:`.assemble`), and a size
that far from the text would make a policy's removal of that part free
content it never held. Parts whose size the source recorded (output tokens,
images) keep it while a step also holds estimated parts: the error is the
estimate's. Content the reconciliation inferred (the hidden system part,
injected parts) keeps the size it was inferred at.

One shortfall has evidence of where it happened: where the prompt shrinks by
more than the step can carry and the call's read from an explicit cache
stopped inside the hidden system part, the runtime changed that part (Claude
Code rewrites the session's part of its system prompt now and then; in
``…local-api__3a429544`` call 16 reads the same 19,512 tokens as call 1, of a
26,706-token hidden part, and the prompt shrinks by 7,447 tokens with no
compaction). The hidden part then loses, at that call, what the parts cannot
carry (at most what lies past the read): ``hidden_cuts``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from prunesim.io.transcripts.assemble import Assembly, Layout

MAX_SCALE = 4.0  # beyond this factor a residual is content the parts do not hold, not their sizes' error


@dataclass
class Anchoring:
    """Per part its anchored size; per call whether its step was anchored, and the calls that fell back."""

    sizes: np.ndarray
    steps: int = 0  # counted calls whose step was anchored (to the recorded level, or its growth)
    fallbacks: list[int] = field(default_factory=list)  # counted calls left at the calibrated sizes
    hidden_cuts: list[tuple[int, int]] = field(default_factory=list)  # (call, tokens) the hidden part lost there


def anchor(layout: Layout, tokens: np.ndarray, out: Assembly, fixed: np.ndarray,
           dropped: np.ndarray, reads: np.ndarray | None = None) -> Anchoring:
    """Anchored sizes of a transcript's parts (module docstring).

    ``tokens``: the calibrated sizes; ``out``: their assembly (the hidden
    system part, injections); ``fixed``: parts whose size the source recorded;
    ``dropped``: each part's ``dropped_at`` with the reconciliation's removals;
    ``reads``: per call, the tokens it read from an explicit cache (nan where
    unknown or the cache is implicit), the evidence for a cut of the hidden part.
    """
    T = layout.turns
    sizes = np.asarray(tokens, float).copy()
    result = Anchoring(sizes)
    leaving: list[list[int]] = [[] for _ in range(T + 2)]
    for i, d in enumerate(dropped):
        if d and not layout.hidden[i]:
            leaving[min(int(d), T + 1)].append(i)
    arriving_inferred = np.zeros(T + 2)  # injected content: (call it arrives at) -> tokens
    leaving_inferred = np.zeros(T + 2)
    for k, tokens_in, drop in out.injections:
        arriving_inferred[k] += tokens_in
        if drop:
            leaving_inferred[min(drop, T + 1)] += tokens_in
    compacted = set(layout.compactions)
    live: set[int] = set()
    step: list[int] = []  # parts arrived since the last counted call
    x = float(out.hidden_tokens)  # the hidden system part arrives with turn 0
    hidden_left = x
    ref = None  # (our prompt, the API's) at the last counted call; None: compare levels
    for k in range(1, T + 1):
        if k in compacted:
            ref = None
        for i in layout.arrivals[k]:
            live.add(i)
            step.append(i)
            x += sizes[i]
        for i in leaving[k]:
            if i in live:
                live.discard(i)
                x -= sizes[i]
        x += arriving_inferred[k] - leaving_inferred[k]
        api = layout.prompt[k - 1]
        if not np.isfinite(api):
            continue
        held = [i for i in step if i in live and sizes[i] > 0]
        held = [i for i in held if not fixed[i]] or held
        targets = [float(api)]  # the recorded level: it also takes back an error carried from before
        if ref is not None and ref[0] != ref[1]:
            targets.append(ref[0] + (float(api) - ref[1]))  # else the recorded growth, carrying that error on
        for target in targets:
            residual = round(target - x)
            if residual == 0 or _spread(sizes, held, residual):
                x = target
                result.steps += 1
                break
        else:
            cut = _hidden_cut(round(float(api) - x), hidden_left, reads[k - 1] if reads is not None else np.nan)
            if cut:
                hidden_left -= cut
                x -= cut
                result.hidden_cuts.append((k, cut))
                result.steps += 1
            else:
                result.fallbacks.append(k)
        step = []
        ref = (x, float(api))
    return result


def _hidden_cut(residual: int, hidden: float, read: float) -> int:
    """Tokens the hidden system part lost before this call, when the evidence says so (else 0): the prompt
    shrank by ``-residual`` more than the parts can carry, and the call's read from an explicit cache stopped
    inside the hidden part, so the prompt changed there, and that part holds what was lost after the read."""
    if residual >= 0 or not np.isfinite(read) or read >= hidden or -residual > hidden - read:
        return 0
    return -residual


def _spread(sizes: np.ndarray, parts: list[int], residual: int) -> bool:
    """Add ``residual`` tokens to ``parts`` in proportion to their sizes, whole tokens (largest remainders);
    False, and nothing changed, when the parts would be scaled beyond ``MAX_SCALE`` either way."""
    if not parts:
        return False
    old = sizes[parts]
    total = float(old.sum())
    new_total = total + residual
    if total <= 0 or not (total / MAX_SCALE <= new_total <= total * MAX_SCALE):
        return False
    exact = old * (new_total / total)
    whole = np.floor(exact)
    short = int(round(new_total - whole.sum()))
    if short > 0:
        whole[np.argsort(-(exact - whole), kind="stable")[:short]] += 1
    sizes[parts] = whole
    return True
