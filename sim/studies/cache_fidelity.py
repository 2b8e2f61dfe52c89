"""Fidelity of the prompt-cache model and of the dollars against real, recorded bills.

Transcripts that record the provider's usage per call are read here directly
(the workload format carries sizes, not bills):

* mini-swe-agent: ``extra.response.usage`` of every assistant message:
  ``prompt_tokens``, ``prompt_tokens_details.cached_tokens``,
  ``completion_tokens`` and, through OpenRouter, ``cost`` in USD; ``created``
  is the call's time.
* Claude Code session files: one API call per ``message.id`` (its records
  repeat the usage); ``input_tokens + cache_creation_input_tokens +
  cache_read_input_tokens`` is the prompt; a ``compact_boundary`` record restarts
  the conversation. Side-chain (sub-agent) calls are left out.
* Codex rollouts: ``token_count`` events' ``last_token_usage`` (a repeated
  event, with the same running total, is the same call).

Each run's calls drive the same cost observer a simulation uses
(:class:`prunesim.observe.metrics.cost.CostMetrics`): between calls the prompt
grows by the recorded difference (one span per call), shrinks when the
recorded prompt shrinks, and restarts at a compaction (after the system part,
where the recorded cache breaks show its mark: :meth:`Run.system_prefix`); the
recorded times are the simulated times, so TTLs apply, to all but the prefix
the first call read, which the runtime's other sessions keep warm
(:meth:`PromptCache.keep_warm`). The recorded prompt and output token counts
are used as they are, so the errors below come from the cache model alone.

One parameter is fitted per model on the fitting runs: an implicit cache's
``reuse``, as recorded over predicted cached tokens (sums over the runs,
predicted with ``reuse = 1``). Explicit caches hit whenever a live entry
matches: nothing is fitted. Every other parameter (granularity, minimum, TTL)
is the model's entry in ``prices.toml``. The baseline predicts ``a * previous
prompt`` cached tokens (capped at the prompt), ``a`` fitted the same way. Errors are judged on runs the fit did not see:
leave-one-out within the folder, or every run of the folder after fitting on
another one (``--fit-on``). A run's error is ``|predicted - recorded| /
recorded`` over its totals; a call's cached-token error is ``|predicted -
recorded| / prompt`` and its cost error ``|predicted - recorded| / recorded``.
The reference cost of a run is its recorded ``cost`` when every call records
one, else its recorded token counts at the list prices of ``prices.toml``.
"""

from __future__ import annotations

import dataclasses
import io
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from prunesim.errors import ResourceError, UserError
from prunesim.io import inputs, prices
from prunesim.io.labels import fitted_names
from prunesim.io.transcripts import usage
from prunesim.io.transcripts import workload as wl
from prunesim.model.scenario import Pricing
from prunesim.model.spans import SYSTEM_PROMPT, Span
from prunesim.observe.metrics.cost import CALL_COLUMNS, CostMetrics
from prunesim.studies.transcript_replay import expand

# Codex rollouts of this CLI version do not name their model; its list prices are gpt-5's either way.
CODEX_DEFAULT_MODEL = prices.ASSUMED_MODELS["codex"]
_READ, _WRITE, _UNCACHED, _COST = (CALL_COLUMNS.index(c) for c in ("cache_read", "cache_write", "uncached",
                                                                   "cost_usd"))


@dataclass(frozen=True)
class Call:
    time_s: float
    prompt: int
    cached: int  # recorded tokens read from the cache
    output: int
    written: int = 0  # recorded cache writes (explicit caches only)
    written_1h: int = 0
    cost: float | None = None  # recorded cost in USD
    reset: bool = False  # the conversation restarted before this call (a compaction)


@dataclass
class Run:
    name: str
    format: str
    model: str
    calls: list[Call] = field(default_factory=list)
    model_recorded: bool = True

    def recorded_events(self) -> tuple[int, dict[int, int]]:
        """What the recording says of the cache beyond the prompts: the tokens warm at the first call (an
        earlier session wrote them) and the calls where the runtime broke the cache (workload.break_points)."""
        usage = [{"prompt_tokens": c.prompt, "cache_read_tokens": c.cached,
                  **({"cache_write_tokens": c.written} if self.format == "claude-code" else {})} for c in self.calls]
        compacted = {k for k, c in enumerate(self.calls, 1) if c.reset}
        warm = self.calls[0].cached if self.calls else 0
        return warm, wl.break_points(usage, [c.time_s for c in self.calls], compacted)

    def system_prefix(self) -> int | None:
        """Where the runtime's mark after its system prompt stands, as the recorded cache breaks show it: the
        read they stop at most often (the longest of equals) short of the first prompt; None when none does."""
        if not self.calls:
            return None
        _, breaks = self.recorded_events()
        reads = Counter(read for read in breaks.values() if 0 < read < self.calls[0].prompt)
        return max(reads, key=lambda read: (reads[read], read)) if reads else None

    @property
    def cost_recorded(self) -> bool:
        return bool(self.calls) and all(c.cost is not None for c in self.calls)


# -- reading recorded usage ---------------------------------------------------------
def _time(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def read_runs(path: Path) -> Iterator[Run | UserError]:
    """The recorded runs in one file (none when it records no usage); a broken file yields its error."""
    where = str(path)
    try:
        if path.suffix == ".jsonl":
            yield from _jsonl_runs(path)
        else:
            with io.TextIOWrapper(inputs.open_input(path, "transcript file"), encoding="utf-8-sig") as fh:
                data = json.load(fh)
            run = _mini_swe_agent(data, path)
            if run is not None:
                yield run
    except UserError as err:
        yield err
    except usage.BadUsage as err:  # the importer refuses the file for the same field
        yield UserError(where, None, str(err))
    except json.JSONDecodeError as err:
        yield inputs.malformed_json(where, err)
    except UnicodeDecodeError:  # worded as the importer words it, so that fidelity reports it once
        yield UserError(where, None, "not a text file (invalid UTF-8)")
    except OSError as err:
        yield UserError(where, None, f"cannot read: {err.strerror or err}")
    except (ValueError, TypeError) as err:  # a usage record whose time or count is not what the format says
        yield UserError(where, None, f"unreadable usage record ({err})")
    except RecursionError as err:
        yield inputs.malformed_json(where, err)


def _mini_swe_agent(data, path: Path) -> Run | None:
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        return None
    calls, model = [], ""
    for i, m in enumerate(data["messages"]):
        if not isinstance(m, dict) or m.get("role") != "assistant":
            continue
        response = ((m.get("extra") or {}).get("response")) or {}
        try:
            u = usage.from_openai(response.get("usage")) if isinstance(response, dict) else {}
        except usage.BadUsage as err:  # worded as the importer words it, so that fidelity reports it once
            raise UserError(str(path), None, f"mini-swe-agent: message {i}: {err}") from None
        if "prompt_tokens" not in u:
            return None  # a call without recorded usage: the run's bill is incomplete
        calls.append(Call(
            time_s=float(response.get("created") or 0),
            prompt=u["prompt_tokens"],
            cached=u.get("cache_read_tokens", 0),
            output=u.get("output_tokens", 0),
            cost=u.get("cost_usd"),
        ))
        model = model or str(response.get("model") or "")
    if not calls:
        return None
    name = path.name.removesuffix(".json").removesuffix(".traj")
    return Run(name, "mini-swe-agent", prices.known_name(model), calls)


def _records(path: Path) -> Iterator[dict]:
    """The records of a JSON-lines file, one at a time (a session file can be large).

    A malformed last line is a session still being written: it is left out (the
    importer warns about it); a malformed line before the end is an error.
    """
    with io.TextIOWrapper(inputs.open_input(path, "transcript file"), encoding="utf-8-sig") as fh:
        broken = None
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            if broken is not None:
                raise inputs.malformed_json(path, broken[1], broken[0])
            try:
                record = json.loads(line)
            except ValueError as err:  # malformed, or a number of thousands of digits
                broken = (lineno, err)
                continue
            if isinstance(record, dict):
                yield record


def _jsonl_runs(path: Path) -> Iterator[Run]:
    first = next(_records(path), None)
    if first is None:
        return
    if first.get("type") == "session_meta":
        run = _codex(_records(path), path)
    else:
        run = _claude_code(_records(path), path)
    if run is not None:
        yield run


def _claude_code(records: Iterator[dict], path: Path) -> Run | None:
    order: list = []  # message ids in order, and "reset" marks
    recorded: dict[str, tuple] = {}  # message id -> (time, raw usage)
    model = ""
    for r in records:
        if r.get("type") == "system" and r.get("subtype") == "compact_boundary":
            order.append(None)
            continue
        msg = r.get("message")
        if r.get("type") != "assistant" or not isinstance(msg, dict) or r.get("isSidechain"):
            continue
        u = msg.get("usage")
        if not isinstance(u, dict) or msg.get("model") == "<synthetic>" or "cache_read_input_tokens" not in u:
            continue
        mid = msg.get("id") or r.get("uuid")
        if mid not in recorded:
            order.append(mid)
            recorded[mid] = (r.get("timestamp"), u)
        else:  # later records of one call repeat its usage, with the output counted so far
            recorded[mid] = (recorded[mid][0], u)
        model = model or str(msg.get("model") or "")
    calls, reset = [], False
    for mid in order:
        if mid is None:
            reset = True
            continue
        stamp, raw = recorded[mid]
        try:
            u = usage.from_anthropic(raw)
        except usage.BadUsage as err:
            raise UserError(str(path), None, f"claude-code: {err}") from None
        calls.append(Call(
            time_s=_time(stamp) if isinstance(stamp, str) else 0.0,
            prompt=u.get("prompt_tokens", 0),
            cached=u.get("cache_read_tokens", 0),
            output=u.get("output_tokens", 0),
            written=u.get("cache_write_tokens", 0),
            written_1h=u.get("cache_write_1h_tokens", 0),
            reset=reset and bool(calls),
        ))
        reset = False
    if not calls:
        return None
    return Run(path.stem, "claude-code", prices.known_name(model), calls)


def _codex(records: Iterator[dict], path: Path) -> Run | None:
    calls, totals, model = [], set(), ""
    for r in records:
        payload = r.get("payload")
        if not isinstance(payload, dict):
            continue
        if r.get("type") == "turn_context" and isinstance(payload.get("model"), str):
            model = payload["model"]
        if r.get("type") != "event_msg" or payload.get("type") != "token_count":
            continue
        info = payload.get("info")
        if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
            continue
        total = json.dumps(info.get("total_token_usage"), sort_keys=True)
        if total in totals:  # the same call reported again (next to it, or the file appended to itself)
            continue
        totals.add(total)
        try:
            u = usage.from_codex(info["last_token_usage"])
        except usage.BadUsage as err:
            raise UserError(str(path), None, f"codex: {err}") from None
        calls.append(Call(
            time_s=_time(r["timestamp"]) if isinstance(r.get("timestamp"), str) else 0.0,
            prompt=u.get("prompt_tokens", 0),
            cached=u.get("cache_read_tokens", 0),
            output=u.get("output_tokens", 0),
        ))
    if not calls:
        return None
    recorded = bool(model)
    return Run(path.stem, "codex", prices.known_name(model) if recorded else CODEX_DEFAULT_MODEL, calls,
               model_recorded=recorded)


def collect(folder: Path) -> tuple[list[Run], list[str]]:
    """Every recorded run under ``folder`` (or in one file), and a line for each file that failed
    (``(path, exception)`` instead of a line when prunesim itself failed on it)."""
    runs, failed = [], []
    seen: set[tuple] = set()  # what the study reads of a run, its calls: a copied file's runs are counted once
    for path in expand([Path(folder)]):
        found = []
        try:
            for item in read_runs(path):
                if isinstance(item, UserError):
                    failed.append(str(item))
                else:
                    found.append(item)
        except (ResourceError, MemoryError):
            raise
        except Exception as err:  # noqa: BLE001 - a bug met on one file: (path, error), for the caller to report
            failed.append((path, err))
            continue
        for run in found:
            key = (run.format, run.model, tuple(run.calls))
            if key not in seen:
                seen.add(key)
                runs.append(run)
    return runs, failed


# -- predicting ----------------------------------------------------------------------
def predict(run: Run, pricing: Pricing, recorded: bool = True, kept_warm: dict[int, int] | None = None) -> np.ndarray:
    """The cost observer's rows for the run's calls: columns of cost.CALL_COLUMNS.

    With ``recorded`` the cache starts as warm as the first call found it, and
    stays that warm after the session's pauses (the sessions that wrote it keep
    it warm), and breaks where the recording shows the runtime broke it
    (Run.recorded_events), as a replay does; and where those breaks show where
    the system prompt's mark stands (Run.system_prefix), the first prompt's
    system part is a span of its own that a compaction keeps, as the replay
    keeps a transcript's hidden system part: the first call after a compaction
    reads it while it is live (without such a mark a compaction keeps the
    prefix the first call read, which stays warm). ``kept_warm`` (call -> tokens, 0 for none)
    replaces what stays warm from each call it names on, for a study of other
    rules (scripts/warm_prefix.py); ``{}`` keeps nothing warm.
    """
    observer = CostMetrics(SimpleNamespace(scenario=SimpleNamespace(pricing=pricing), trace="all"))
    spans: list[Span] = []
    held = 0
    next_id = 0

    def drop_from_end(tokens: int) -> None:
        nonlocal held
        while tokens > 0 and spans:
            last = spans[-1]
            cut = min(tokens, last.tokens)
            observer.on_span_removed(0.0, 0, "runtime_drop", last, cut, 0, 0, 0)
            last.tokens -= cut
            tokens -= cut
            held -= cut
            if last.tokens == 0:
                spans.pop()

    def append(tokens: int, time: float, turn: int, tags: frozenset = frozenset()) -> None:
        nonlocal held, next_id
        span = Span(next_id, "user", tokens, turn, tags=tags)
        next_id += 1
        observer.on_span_appended(time, turn, span, span.tokens, 0, 0, 0)
        spans.append(span)
        held += tokens

    warm, breaks = run.recorded_events() if recorded else (0, {})
    system = run.system_prefix() if recorded else None
    kept = 0  # tokens a compaction keeps: the system part
    for turn, call in enumerate(run.calls, 1):
        if call.reset:
            drop_from_end(held - kept)
        if turn == 1 and system is not None:
            append(system, call.time_s, turn, frozenset({SYSTEM_PROMPT}))  # the cost observer marks its end
            kept = system
        elif turn == 1 and 0 < warm <= call.prompt:  # no mark shown: a compaction keeps at least the warm prefix
            append(warm, call.time_s, turn)
            kept = warm
        if call.prompt > held:
            append(call.prompt - held, call.time_s, turn)
        elif call.prompt < held:
            drop_from_end(held - call.prompt)
        if turn == 1 and warm:
            observer.on_cache_warmed(call.time_s, turn, warm)
        if kept_warm is not None and (turn == 1 or turn in kept_warm):
            observer.keep_warm(kept_warm.get(turn, 0))
        if turn in breaks:
            observer.on_runtime_rewrite(call.time_s, turn, breaks[turn])
        observer.on_model_call(call.time_s, turn, call.prompt, call.output, False)
    return np.array([row for row in observer.calls], dtype=float)


def reference_cost(run: Run, p: Pricing) -> float:
    """The run's bill: its recorded cost, or its recorded tokens at list prices."""
    if run.cost_recorded:
        return float(sum(c.cost for c in run.calls))
    total = 0.0
    for c in run.calls:
        written_5m = c.written - c.written_1h
        if p.cache == "explicit":
            write = written_5m * p.cache_write_5m + c.written_1h * p.cache_write_1h
        else:
            write = c.written * p.input
        fresh = c.prompt - c.cached - c.written
        total += (c.cached * p.cache_read + write + fresh * p.input + c.output * p.output) / 1e6
    return total


def recorded_cost_of_call(c: Call, p: Pricing) -> float:
    return c.cost if c.cost is not None else reference_cost(Run("", "", "", [c]), p)


@dataclass
class Fit:
    """One model's fitted cache parameters and baseline factor."""

    model: str
    pricing: Pricing
    baseline: float
    runs: int

    def as_dict(self) -> dict:
        p = self.pricing
        return {"cache": p.cache, "granularity": p.granularity, "min_tokens": p.min_tokens,
                "reuse": round(p.reuse, 4), "ttl": p.ttl, "baseline_factor": round(self.baseline, 4),
                "runs": self.runs}


class Predictions:
    """Each run's predicted cached tokens with ``reuse = 1`` (computed once; reuse only scales them)."""

    def __init__(self, runs: list[Run], base: Pricing):
        self.base = base
        self.readable = [predict(r, dataclasses.replace(base, reuse=1.0))[:, _READ].sum() for r in runs]


def fit(runs: list[Run], idx: list[int], pred: Predictions, model: str) -> Fit:
    recorded = sum(c.cached for i in idx for c in runs[i].calls)
    readable = sum(pred.readable[i] for i in idx)
    reuse = 1.0  # explicit caches hit whenever a live entry matches: nothing to fit
    if pred.base.cache == "implicit" and readable > 0:
        reuse = min(1.0, recorded / readable)
    prev = sum(sum(_baseline_basis(runs[i])) for i in idx)
    factor = min(1.0, recorded / prev) if prev > 0 else 0.0
    return Fit(model, dataclasses.replace(pred.base, reuse=round(float(reuse), 6)), float(factor), len(idx))


def _baseline_basis(run: Run) -> list[int]:
    """Per call: the previous call's prompt, capped at this prompt (0 for the first call and after a reset)."""
    out, prev = [], 0
    for c in run.calls:
        if c.reset:
            prev = 0
        out.append(min(prev, c.prompt))
        prev = c.prompt
    return out


def evaluate(run: Run, f: Fit) -> dict:
    """A run judged with a fit that did not see it: totals, errors, and per-call errors."""
    p = f.pricing
    rows = predict(run, p)
    prompt = np.array([c.prompt for c in run.calls], float)
    cached = np.array([c.cached for c in run.calls], float)
    bill = np.array([recorded_cost_of_call(c, p) for c in run.calls])
    predicted_cost = rows[:, _COST]
    base_cached = np.array([round(f.baseline * b) for b in _baseline_basis(run)], float)
    output = np.array([c.output for c in run.calls], float)
    base_cost = ((prompt - base_cached) * p.input + base_cached * p.cache_read + output * p.output) / 1e6
    return {
        "transcript": run.name,
        "format": run.format,
        "model": run.model + ("" if run.model_recorded else " (assumed)"),
        "calls": len(run.calls),
        "cost_source": "recorded" if run.cost_recorded else "recorded tokens at list prices",
        "recorded_cached": int(cached.sum()),
        "predicted_cached": int(rows[:, _READ].sum()),
        "cache_error": _rel(rows[:, _READ].sum(), cached.sum()),
        "recorded_cost": round(float(bill.sum()), 6),
        "predicted_cost": round(float(predicted_cost.sum()), 6),
        "cost_error": _rel(predicted_cost.sum(), bill.sum()),
        "baseline_cache_error": _rel(base_cached.sum(), cached.sum()),
        "baseline_cost_error": _rel(base_cost.sum(), bill.sum()),
        "_call_cache": np.abs(rows[:, _READ] - cached) / np.maximum(prompt, 1),
        "_call_cost": np.abs(predicted_cost - bill) / np.where(bill > 0, bill, np.nan),
    }


def _rel(predicted: float, recorded: float) -> float | None:
    return round(abs(float(predicted) - float(recorded)) / float(recorded), 6) if recorded > 0 else None


def _pricing_for(model: str, table: dict) -> Pricing | None:
    return prices.pricing(model) if model in table else None


def report(folder: Path, fit_on: Path | None = None) -> dict:
    """The cache and cost fidelity of every recorded run under ``folder`` (see the module docstring)."""
    runs, failed = collect(folder)
    fit_runs, fit_failed = (collect(fit_on) if fit_on is not None else (runs, []))
    if fit_on is not None and not fit_runs:
        for failure in fit_failed:  # prunesim failed on a file: a bug, for the crash report
            if isinstance(failure, tuple):
                raise failure[1]
        # When files failed, the first one is why: say so rather than blame the recorded usage.
        why = f" ({len(fit_failed)} file(s) failed; the first: {fit_failed[0]})" if fit_failed else ""
        raise UserError("--fit-on", str(fit_on), f"holds no transcript that records cached tokens{why}")
    table = prices.load()
    skipped: list[str] = []
    rows: list[dict] = []
    fits: dict[str, Fit] = {}
    for model in sorted({r.model for r in runs}):
        base = _pricing_for(model, table)
        mine = [r for r in runs if r.model == model]
        if base is None:
            skipped += [f"{r.name}: model {model!r} is not in prices.toml" for r in mine]
            continue
        if fit_on is None:
            if len(mine) < 2:
                skipped += [f"{r.name}: the only run of {model}: nothing to fit on without it" for r in mine]
                continue
            pred = Predictions(mine, base)
            fits[model] = fit(mine, list(range(len(mine))), pred, model)
            for i, run in enumerate(mine):
                others = [j for j in range(len(mine)) if j != i]
                rows.append(evaluate(run, fit(mine, others, pred, model)))
        else:
            donors = [r for r in fit_runs if r.model == model]
            if not donors:
                skipped += [f"{r.name}: no run of {model} in {fit_on}" for r in mine]
                continue
            f = fit(donors, list(range(len(donors))), Predictions(donors, base), model)
            fits[model] = f
            rows.extend(evaluate(run, f) for run in mine)
    return _summarize(rows, fits, skipped, failed + fit_failed, fit_on)


def _quantiles(values, prefix: str) -> dict:
    v = np.array([x for x in values if x is not None and np.isfinite(x)], float)
    if not len(v):
        return {f"{prefix}median_error": None, f"{prefix}p90_error": None}
    return {f"{prefix}median_error": round(float(np.median(v)), 6),
            f"{prefix}p90_error": round(float(np.percentile(v, 90)), 6)}


def _summarize(rows: list[dict], fits: dict, skipped: list[str], failed: list[str], fit_on) -> dict:
    call_cache = np.concatenate([r.pop("_call_cache") for r in rows]) if rows else np.array([])
    call_cost = np.concatenate([r.pop("_call_cost") for r in rows]) if rows else np.array([])
    out = {
        "validation": f"fit on {fit_on}" if fit_on is not None else "leave-one-out",
        "runs": len(rows),
        "skipped": skipped,
        "failed": failed,
        "fitted": {m: f.as_dict() for m, f in sorted(fits.items())},
        **_quantiles([r["cache_error"] for r in rows], "cache_"),
        **_quantiles([r["cost_error"] for r in rows], "cost_"),
        **_quantiles(call_cache, "call_cache_"),
        **_quantiles(call_cost, "call_cost_"),
        "baseline": {**_quantiles([r["baseline_cache_error"] for r in rows], "cache_"),
                     **_quantiles([r["baseline_cost_error"] for r in rows], "cost_")},
        "per_run": rows,
    }
    return out


def format_report(rep: dict) -> str:
    if not rep["runs"] and not rep["skipped"]:
        return "cache and cost: no transcript here records cached tokens"
    pct = _pct
    lines = [f"cache and cost against recorded bills ({rep['validation']}): {rep['runs']} run(s)"]
    for model, f in rep["fitted"].items():
        lines.append(f"  fitted {model}: {f['cache']} cache, granularity {f['granularity']}, min {f['min_tokens']}, "
                     f"reuse {f['reuse']:.4f}; baseline cached = {f['baseline_factor']:.4f} x previous prompt "
                     f"({f['runs']} run(s))")
    shown = fitted_names([r["transcript"] for r in rep["per_run"]], 48)  # distinct, not cut alike
    for r in rep["per_run"]:
        lines.append(f"  {shown[r['transcript']]:48s} {r['calls']:4d} calls  cached {r['recorded_cached']:>10,} "
                     f"pred {r['predicted_cached']:>10,} ({pct(r['cache_error'])})  cost ${r['recorded_cost']:.4f} "
                     f"pred ${r['predicted_cost']:.4f} ({pct(r['cost_error'])})")
    for line in rep["skipped"]:
        lines.append(f"  skipped {line}")
    b = rep["baseline"]
    lines.append(f"per run, cached tokens: median error {pct(rep['cache_median_error'])}, p90 "
                 f"{pct(rep['cache_p90_error'])} (baseline {pct(b['cache_median_error'])}, "
                 f"{pct(b['cache_p90_error'])})")
    lines.append(f"per run, cost: median error {pct(rep['cost_median_error'])}, p90 {pct(rep['cost_p90_error'])} "
                 f"(baseline {pct(b['cost_median_error'])}, {pct(b['cost_p90_error'])})")
    lines.append(f"per call: cached tokens median error {pct(rep['call_cache_median_error'])} of the prompt, p90 "
                 f"{pct(rep['call_cache_p90_error'])}; cost median error {pct(rep['call_cost_median_error'])}, p90 "
                 f"{pct(rep['call_cost_p90_error'])}")
    return "\n".join(lines)


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.2f}%"
