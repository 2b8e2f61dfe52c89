"""Replay identity: does the replay of what really ran bill what was really billed?

``fidelity`` checks the parts of a replay one at a time (the window against
the API's prompt counts, the cache model fed the recorded prompts); this study
judges the whole pipeline that ``replay-dir`` and ``leaderboard`` run
(:func:`prunesim.studies.transcript_replay.replay`: the import's sizes, the
recorded model's prices, window and clock, the engine and its cost observer)
under the policy that actually ran: ``noop``, with the runtime's own recorded
removals (Claude Code's and Codex's compactions, the reasoning an API drops)
applied where they happened. Per run it compares the replay's prompt tokens,
cached tokens and dollars with the recorded usage and bill (the recorded
``cost`` when every call records one, else the recorded token counts at list
prices: :func:`cache_fidelity.reference_cost`). Each run is replayed twice:
with the anchored sizes (``replay_*``: what ``replay-dir`` and ``leaderboard``
run, parts sized to the recorded prompt counts and recorded output counts
billed, :mod:`prunesim.io.transcripts.anchor`) and with the calibrated sizes
alone (``calibrated_*``: the size model's contribution). A call whose recorded
output count is partial (:func:`workload.recorded_output_counts`) counts, in
the bill and in both replays, what it wrote at the fold's calibrated sizes.

Two things are fitted: the token calibration (:mod:`calibration`) and an
implicit cache's ``reuse`` (:mod:`cache_fidelity`). Both are fitted on the
other folds only: the transcripts of each calibration profile are split into
``folds`` folds by sorted name (the i-th to fold ``i % folds``), and each fold
is replayed with a calibration and a ``reuse`` fitted without it. Beside each
run the cache model fed the recorded prompts (:func:`cache_fidelity.evaluate`,
with the same fold's ``reuse``) gives the error that is not the replay's own:
``excess`` is how much worse the replay's dollars are (percentage points of
the median and of the 90th percentile of the per-run errors).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from prunesim.errors import ResourceError, UserError
from prunesim.io import prices
from prunesim.io.labels import fitted_names
from prunesim.io.scenario_files import replace
from prunesim.io.transcripts import assemble as asm
from prunesim.io.transcripts import calibration as cal
from prunesim.io.transcripts import formats
from prunesim.io.transcripts import workload as wl
from prunesim.io.transcripts.identity import Seen
from prunesim.model.scenario import Scenario
from prunesim.observe.metrics.cost import CALL_COLUMNS
from prunesim.studies import cache_fidelity as cf
from prunesim.studies.fidelity import TemporaryStore
from prunesim.studies.transcript_replay import forced_cut_note, recorded_model, replay, replay_scenario

# The goals of the replay, as the issue that asked for this study sets them (fractions of the recorded bill).
GOALS = {"median": 0.05, "p90": 0.15, "excess": 0.01}
_PROMPT, _READ, _COST = (CALL_COLUMNS.index(c) for c in ("prompt_tokens", "cache_read", "cost_usd"))


def recorded_run(data: wl.WorkloadData, model: str) -> cf.Run | None:
    """The recorded usage of a workload as the cache study reads it; None unless every call records its prompt
    and cached tokens (a bill with a gap cannot be compared)."""
    usage = data.header.get("usage") or []
    if len(usage) != data.turns or not all(u and "prompt_tokens" in u and "cache_read_tokens" in u for u in usage):
        return None
    times = data.header.get("call_times") or [None] * data.turns
    resets = {e["turn"] for e in data.header.get("events") or () if e.get("event") == "compaction"}
    outputs = wl.billed_outputs(data)  # the recorded count, or what the call wrote where the file's is partial
    calls = [cf.Call(time_s=float(times[k - 1] or 0.0), prompt=u["prompt_tokens"], cached=u["cache_read_tokens"],
                     output=outputs[k - 1], written=u.get("cache_write_tokens", 0),
                     written_1h=u.get("cache_write_1h_tokens", 0), cost=u.get("cost_usd"), reset=k in resets and k > 1)
             for k, u in enumerate(usage, 1)]
    return cf.Run(data.name, data.header["format"], model, calls)


@dataclass
class _Entry:
    name: str
    group: str  # calibration profile (or format, uncalibrated): the unit of the folds
    model: str
    run: cf.Run
    store: str  # pickled (Transcript, Sized)


@dataclass
class Study(TemporaryStore):
    """Replay identity of a folder; use inside ``with`` (parts wait in a temporary folder, one file each)."""

    prefix = "prunesim-identity-"

    base: Scenario
    tokenizer: str
    calibration: str = "auto"
    sidechains: str = "separate"
    folds: int = 5
    entries: list[_Entry] = field(default_factory=list)
    seen: Seen = field(default_factory=Seen)  # a run read again (a copied file) is judged once
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # the judged replays' forced cuts (forced_cut_note)

    def read(self, files: list[Path], on_error: Callable[[Path, Exception], None] = lambda p, e: None) -> None:
        for path in files:
            mark = len(self.entries)
            try:
                self._read(Path(path))
            except (ResourceError, MemoryError):
                raise
            except Exception as err:  # noqa: BLE001 - bad input or a bug on one file: reported, the rest goes on
                del self.entries[mark:]
                self.seen.forget(path)
                on_error(path, err)

    def _read(self, path: Path) -> None:
        if path.is_file() and wl.is_workload_file(path):
            self.skipped.append(f"{path}: a workload file holds sizes, not the text to refit them on")
            return
        table = prices.load()
        for t in formats.iter_transcripts(path, self.sidechains):
            chosen = cal.choose(t.model, t.format, self.tokenizer, self.calibration)
            s = cal.sized(t, self.tokenizer, raw=chosen is None)
            sizes = np.rint(s.sizes(chosen))
            data = wl.build(t, self.tokenizer, chosen, s, sizes, asm.assemble(s.layout, sizes))
            data.path = str(path)
            if self.seen.is_repeat(data):
                self.skipped.append(self.seen.repeats[-1])
                continue
            replay_scenario(self.base, data)  # an unknown model or an impossible window: this file's error
            model = self.base.pricing.model if "pricing" in self.base.replay.pinned else recorded_model(data)[0]
            if model not in table:
                self.skipped.append(f"{data.name}: no model to bill it as (set --set pricing.model=NAME)")
                continue
            run = recorded_run(data, model)
            if run is None:
                self.skipped.append(f"{data.name}: its calls do not all record prompt and cached tokens")
                continue
            store = Path(self._tmp.name) / f"{len(self.entries)}.pickle"
            with open(store, "wb") as fh:
                pickle.dump((t, s), fh, protocol=pickle.HIGHEST_PROTOCOL)
            group = chosen.name if chosen else t.format
            self.entries.append(_Entry(data.name, group, model, run, str(store)))

    def _load(self, e: _Entry):
        with open(e.store, "rb") as fh:
            return pickle.load(fh)

    def report(self, donors: Study | None = None) -> dict:
        """Every run judged: with ``donors`` (``--fit-on``), with what is fitted on all of theirs; else by folds."""
        rows: list[dict] = []
        groups: dict[str, list[_Entry]] = {}
        cal_groups = {p.name for p in cal.load_profiles()}
        for e in self.entries:
            groups.setdefault(e.group, []).append(e)
        if donors is not None:
            for group, members in sorted(groups.items()):
                train = [e for e in donors.entries if e.group == group]
                fitted = donors._calibration(train, group) if self.calibration == "auto" and group in cal_groups \
                    else None
                fits, reuse = donors._cache_fits(train), donors._replay_reuse(train, fitted)
                for e in sorted(members, key=lambda e: e.name):
                    rows.append(self._judge(e, fitted, fits.get(e.model), "fitted on --fit-on", reuse))
            return summarize(rows, self.skipped, self.folds, self.warnings)
        for group, members in sorted(groups.items()):
            members = sorted(members, key=lambda e: e.name)
            k = min(self.folds, len(members))
            if k < 2:  # nothing to hold out: judged with the shipped values, said so
                rows.extend(self._judge(e, None, None, "shipped") for e in members)
                continue
            for fold in range(k):
                train = [e for i, e in enumerate(members) if i % k != fold]
                test = [e for i, e in enumerate(members) if i % k == fold]
                fitted = None
                if self.calibration == "auto" and group in cal_groups:  # a given calibration is not refitted
                    fitted = self._calibration(train, group)
                fits = self._cache_fits(train)
                reuse = self._replay_reuse(train, fitted)
                for e in test:
                    rows.append(self._judge(e, fitted, fits.get(e.model), f"fold {fold + 1} of {k}", reuse))
        return summarize(rows, self.skipped, self.folds, self.warnings)

    def _calibration(self, train: list[_Entry], group: str) -> cal.Calibration | None:
        try:
            return cal.fit(lambda: (self._load(e)[1] for e in train), self.tokenizer, name=group)
        except UserError:  # too few recorded counts to fit on: the shipped calibration
            return None

    def _cache_fits(self, train: list[_Entry]) -> dict[str, cf.Fit]:
        """Per model, the cache model's fit (reuse, baseline) on the training runs' recorded prompts."""
        fits = {}
        for model in sorted({e.model for e in train}):
            runs = [e.run for e in train if e.model == model]
            fits[model] = cf.fit(runs, list(range(len(runs))), cf.Predictions(runs, prices.pricing(model)), model)
        return fits

    def _replay_reuse(self, train: list[_Entry], fitted: cal.Calibration | None) -> dict[tuple[str, str], float]:
        """Per (sizes, model) with an implicit cache, the replay's own ``reuse``: recorded cached tokens over what
        the replays of the training runs could read (with ``reuse = 1``), summed over them, as the cache study
        fits it on recorded prompts. An explicit cache hits whenever a live entry matches: nothing is fitted."""
        out = {}
        for model in sorted({e.model for e in train}):
            if prices.pricing(model).cache != "implicit":
                continue
            mine = [e for e in train if e.model == model]
            recorded = float(sum(c.cached for e in mine for c in e.run.calls))
            readable = dict.fromkeys(wl.SIZES, 0.0)
            for e in mine:
                data = self._workload(e, fitted)  # built once, replayed at each sizing
                for sizes in wl.SIZES:
                    calls = np.asarray(replay(data, _with_reuse(self.base, model, 1.0, sizes), "noop")[0].calls, float)
                    readable[sizes] += calls[:, _READ].sum()
            for sizes in wl.SIZES:
                if readable[sizes] > 0:
                    out[sizes, model] = round(min(1.0, recorded / readable[sizes]), 6)
        return out

    def _workload(self, e: _Entry, fitted: cal.Calibration | None) -> wl.WorkloadData:
        t, s = self._load(e)
        chosen = fitted if fitted is not None else cal.choose(t.model, t.format, self.tokenizer, self.calibration)
        sizes = np.rint(s.sizes(chosen))
        return wl.build(t, self.tokenizer, chosen, s, sizes, asm.assemble(s.layout, sizes))

    def _judge(self, e: _Entry, fitted: cal.Calibration | None, fit: cf.Fit | None, validation: str,
               reuse: dict | None = None) -> dict:
        """One run's row: the replay with anchored sizes (``replay_*``, the path replay-dir and leaderboard
        take) and with the calibrated sizes alone (``calibrated_*``), against the recorded usage."""
        data = self._workload(e, fitted)
        if fit is None:
            pricing = replay_scenario(self.base, data).pricing
            fit = cf.Fit(e.model, pricing, 0.0, 0)
            validation = "shipped"
        # The fold's own sizes estimate the outputs of calls whose recorded count is partial, on both sides.
        recorded = recorded_run(data, e.model) or e.run
        bill = cf.reference_cost(recorded, fit.pricing)
        cache_model = cf.evaluate(recorded, fit)
        prompt = float(sum(c.prompt for c in recorded.calls))
        cached = float(sum(c.cached for c in recorded.calls))
        outputs = data.header.get("outputs") or []
        row = {
            "transcript": e.name, "format": recorded.format, "model": e.model, "validation": validation,
            "calls": len(recorded.calls), "cache_model_reuse": round(fit.pricing.reuse, 4),
            "recorded_prompt": int(prompt), "recorded_cached": int(cached), "recorded_cost": round(bill, 6),
            "estimated_outputs": sum(n is None for n in outputs) if outputs else len(recorded.calls),
            "anchored_steps": data.header.get("anchored_steps", 0),
            "anchor_fallbacks": list(data.header.get("anchor_fallbacks") or ()),
            "cache_model_cost_error": cache_model["cost_error"],
            "clock": "recorded" if data.header.get("call_times") else "latency model",
        }
        results = []
        for sizes, prefix in zip(wl.SIZES, _PREFIXES, strict=True):
            r = (reuse or {}).get((sizes, e.model), fit.pricing.reuse)
            result, _ = replay(data, _with_reuse(self.base, e.model, r, sizes), "noop")
            results.append(result)
            calls = np.asarray(result.calls, float)
            row.update({
                f"{prefix}reuse": round(r, 4),
                f"{prefix}prompt": int(calls[:, _PROMPT].sum()), f"{prefix}cached": int(calls[:, _READ].sum()),
                f"{prefix}cost": round(float(result.summary["cost_usd"]), 6),
                f"{prefix}prompt_error": _signed(calls[:, _PROMPT].sum(), prompt),
                f"{prefix}cached_error": _signed(calls[:, _READ].sum(), cached),
                f"{prefix}cost_error": _signed(result.summary["cost_usd"], bill),
                f"{prefix}forced_truncations": result.summary["forced_truncations"],
            })
        note = forced_cut_note(data, results)  # each run is judged once: one line per transcript
        if note:
            self.warnings.append(note)
        return row


_PREFIXES = ("replay_", "calibrated_")  # the row's figures for each of wl.SIZES
SET_PER_RUN = ("pricing.model", "pricing.reuse", "replay.sizes")  # what _with_reuse sets on every replay


def _with_reuse(base: Scenario, model: str, reuse: float, sizes: str = "anchored") -> Scenario:
    if ("pricing" in base.replay.pinned and base.pricing.model == model and base.pricing.reuse == reuse
            and base.replay.sizes == sizes):
        return base
    return replace(base, {"pricing.model": model, "pricing.reuse": reuse, "replay.sizes": sizes}, pin=True)


def _signed(ours: float, recorded: float) -> float | None:
    return round((float(ours) - recorded) / recorded, 6) if recorded > 0 else None


def _q(values: list) -> dict:
    v = np.abs(np.array([x for x in values if x is not None], float))
    if not len(v):
        return {"median": None, "p90": None}
    return {"median": round(float(np.median(v)), 6), "p90": round(float(np.percentile(v, 90)), 6)}


def summarize(rows: list[dict], skipped: list[str], folds: int, warnings: list[str] = ()) -> dict:
    """Per format and over all runs: median and p90 of the absolute errors, and the replay's excess;
    ``warnings``: the lines to show on stderr (a noop replay's forced cuts)."""
    out = {"folds": folds, "runs": len(rows), "skipped": skipped, "goals": GOALS, "by_format": {}, "per_run": rows,
           "warnings": list(warnings)}
    for fmt in sorted({r["format"] for r in rows}):
        mine = [r for r in rows if r["format"] == fmt]
        out["by_format"][fmt] = _figures(mine)
    out.update(_figures(rows))
    return out


def _figures(rows: list[dict]) -> dict:
    """The anchored replay's figures, with the calibrated replay's under ``calibrated``."""
    out = _mode_figures(rows, _PREFIXES[0])
    out["calibrated"] = _mode_figures(rows, _PREFIXES[1])
    out["estimated_outputs"] = sum(r["estimated_outputs"] for r in rows)
    out["anchored_steps"] = sum(r["anchored_steps"] for r in rows)
    out["anchor_fallbacks"] = sum(len(r["anchor_fallbacks"]) for r in rows)
    return out


def _mode_figures(rows: list[dict], prefix: str) -> dict:
    cost, model = _q([r[f"{prefix}cost_error"] for r in rows]), _q([r["cache_model_cost_error"] for r in rows])
    excess = {k: (round(cost[k] - model[k], 6) if cost[k] is not None and model[k] is not None else None)
              for k in ("median", "p90")}
    met = None
    if cost["median"] is not None and excess["median"] is not None:
        met = bool(cost["median"] <= GOALS["median"] and cost["p90"] <= GOALS["p90"]
                   and max(excess.values()) <= GOALS["excess"])
    return {"runs": len(rows), "cross_validated": sum(r["validation"] != "shipped" for r in rows),
            "prompt": _q([r[f"{prefix}prompt_error"] for r in rows]),
            "cached": _q([r[f"{prefix}cached_error"] for r in rows]),
            "cost": cost, "cache_model_cost": model, "excess": excess, "goals_met": met,
            "recorded_cost": round(sum(r["recorded_cost"] for r in rows), 4),
            "replay_cost": round(sum(r[f"{prefix}cost"] for r in rows), 4)}


def format_report(rep: dict) -> str:
    if not rep["runs"]:
        return "replay identity: no transcript here records every call's prompt and cached tokens"
    pct = cf._pct
    lines = [f"replay identity (noop and the runtime's recorded removals, through transcript_replay.replay; "
             f"calibration and reuse fitted on the other of {rep['folds']} folds): {rep['runs']} run(s); "
             f"anchored sizes carry the steps of {rep['anchored_steps']:,} counted call(s), "
             f"{rep['anchor_fallbacks']:,} fell back to the calibrated sizes; {rep['estimated_outputs']:,} call(s) "
             "record no final output count (billed, on both sides, at what they wrote)"]
    shown = fitted_names([r["transcript"] for r in rep["per_run"]], 44)  # distinct, not cut alike
    for r in rep["per_run"]:
        lines.append(f"  {shown[r['transcript']]:44s} {r['calls']:4d} calls  prompt {_sp(r['replay_prompt_error'])}"
                     f"  cached {_sp(r['replay_cached_error'])}  ${r['replay_cost']:.4f} against "
                     f"${r['recorded_cost']:.4f} ({_sp(r['replay_cost_error'])}; calibrated sizes "
                     f"{_sp(r['calibrated_cost_error'])}; cache model {pct(r['cache_model_cost_error'])})  "
                     f"{r['validation']}" + ("" if r["clock"] == "recorded" else ", no recorded clock"))
    for line in rep["skipped"]:
        lines.append(f"  skipped {line}")
    for fmt, f in [*rep["by_format"].items(), ("all", rep)]:
        for label, g in ((f"{fmt}, calibrated sizes", f["calibrated"]), (fmt, f)):
            verdict = {True: "goals met", False: "goals missed", None: "no verdict"}[g["goals_met"]]
            lines.append(
                f"{label}: {g['runs']} run(s), {g['cross_validated']} judged out of sample; per run |error| median "
                f"/ p90: prompt {pct(g['prompt']['median'])} / {pct(g['prompt']['p90'])}, cached "
                f"{pct(g['cached']['median'])} / {pct(g['cached']['p90'])}, dollars {pct(g['cost']['median'])} / "
                f"{pct(g['cost']['p90'])} (cache model fed the recorded prompts {pct(g['cache_model_cost']['median'])}"
                f" / {pct(g['cache_model_cost']['p90'])}; excess {_pp(g['excess']['median'])} / "
                f"{_pp(g['excess']['p90'])}); ${g['replay_cost']:.2f} against ${g['recorded_cost']:.2f} recorded; "
                f"{verdict} (median <= {GOALS['median']:.0%}, p90 <= {GOALS['p90']:.0%}, excess <= "
                f"{100 * GOALS['excess']:.0f} pp)")
    return "\n".join(lines)


def _sp(x) -> str:
    return "n/a" if x is None else f"{100 * x:+.2f}%"


def _pp(x) -> str:
    return "n/a" if x is None else f"{100 * x:+.2f} pp"

