"""Fidelity: does a replay's window match what the real API counted?

For every transcript that records the API's prompt tokens per model call, the
no-op replay's context before each call (every part that arrived and was not
dropped by the runtime: :func:`workload.context_before_calls`) is compared with
the API's count. A transcript's error is the mean absolute percentage error
``mean(|ours - api| / api)`` over its calls with a recorded count, leaving out
the *anchored* calls, whose own count sized content the file does not show (the
hidden system prompt at the first call; content a runtime injected or removed
unseen, :mod:`prunesim.io.transcripts.assemble`): their error would be zero by
construction. A folder reports the median and the 90th percentile (linear
interpolation) of the transcripts' errors.

Two figures, always both (``median_error`` and ``p90_error`` repeat the
cross-validated ones when at least ``MIN_CROSS_VALIDATED`` transcripts were
cross-validated, else the as-imported ones; ``headline`` says which):

* **cross-validated**: the transcripts of
  each calibration profile (model family) are split into ``folds`` folds by
  sorted name (the i-th name goes to fold ``i % folds``); each fold is sized
  with a calibration fitted on the other folds only
  (:func:`calibration.fit`). A transcript's error is never measured with
  parameters fitted on it.
* **as imported** (``as_imported``): each transcript sized the way ``import``
  sizes it, with the shipped calibration (or ``--calibration``). For folders
  the shipped calibration was fitted on, this figure is in-sample.

The folder is read once and streamed: each transcript's featurized parts are
kept in a temporary folder, one file each, and the fits pass over them there;
memory stays flat however many files the folder holds.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from prunesim.errors import ResourceError, UserError
from prunesim.io.transcripts import assemble as asm
from prunesim.io.transcripts import calibration as cal
from prunesim.io.transcripts import formats
from prunesim.io.transcripts import workload as wl
from prunesim.io.transcripts.identity import Seen
from prunesim.model.reaction import shipped_fit
from prunesim.studies import reaction

DEFAULT_FOLDS = 5
# Fewer cross-validated transcripts than this and the headline figures are the as-imported ones: a fit on a
# handful of runs says little (with the shipped calibration, a folder it was not fitted on is out of sample).
MIN_CROSS_VALIDATED = 10


@dataclass
class Calls:
    """One transcript's calls with a recorded count that were predicted, not anchored."""

    name: str
    model: str
    format: str
    profile: str
    ours: list[float]
    api: list[float]
    anchored: int = 0

    @property
    def error(self) -> float:
        x = np.asarray(self.ours, float)
        p = np.asarray(self.api, float)
        return float(np.mean(np.abs(x - p) / p))


def calls_of(data: wl.WorkloadData) -> Calls | None:
    """Our context against the API's count before each call of a workload; None without counts."""
    prompt = data.header.get("prompt_tokens") or []
    anchored = set(data.header.get("anchored_calls") or [])
    context = wl.context_before_calls(wl.sized_as(data, "calibrated"))  # the size model's, not the anchored sizes
    ours, api = [], []
    for k, p in enumerate(prompt, 1):
        if isinstance(p, int) and p > 0 and k not in anchored:
            ours.append(float(context[k - 1]))
            api.append(float(p))
    if not ours:
        return None
    return Calls(data.name, data.header.get("model") or "", data.header["format"],
                 data.header.get("calibration") or "none", ours, api,
                 sum(1 for k in anchored if k <= len(prompt) and isinstance(prompt[k - 1], int)))


def calls_of_assembly(s: cal.Sized, out: asm.Assembly, fmt: str, profile: str) -> Calls | None:
    """The same comparison from an assembly (the cross-validated route; equal to calls_of on its workload)."""
    P = s.layout.prompt
    ok = np.isfinite(P) & ~out.anchored
    if not ok.any():
        return None
    return Calls(s.name, s.model, fmt, profile, out.context[ok].tolist(), P[ok].tolist(),
                 int((np.isfinite(P) & out.anchored).sum()))


def quantiles(errors: list[float]) -> dict:
    e = np.asarray(errors, float)
    if not len(e):
        return {"median_error": None, "p90_error": None}
    return {"median_error": round(float(np.median(e)), 6), "p90_error": round(float(np.percentile(e, 90)), 6)}


# -- the study ------------------------------------------------------------------
@dataclass
class _Entry:
    """What pass one keeps of a transcript: its figures as imported and where its parts wait."""

    name: str
    group: str
    format: str
    calibration: cal.Calibration | None
    imported: Calls
    store: str  # pickled Sized


class TemporaryStore:
    """A study whose transcripts wait in a temporary folder, one file each, while it runs: use inside ``with``."""

    prefix = "prunesim-fidelity-"

    def __enter__(self):
        self._tmp = tempfile.TemporaryDirectory(prefix=self.prefix)
        return self

    def __exit__(self, *exc) -> None:
        self._tmp.cleanup()


@dataclass
class Study(TemporaryStore):
    tokenizer: str
    calibration: str = "auto"
    sidechains: str = "separate"
    folds: int = DEFAULT_FOLDS
    entries: list[_Entry] = field(default_factory=list)
    stored: list[Calls] = field(default_factory=list)  # workload files: as stored, no text to refit
    skipped: int = 0
    failed: int = 0
    imported: int = 0
    compactions: list[dict] = field(default_factory=list)
    reactions: list[tuple] = field(default_factory=list)  # reaction.collect of each workload
    seen: Seen = field(default_factory=Seen)  # a run read again (a copied file) is counted once

    def run(self, files: list[Path], on_error: Callable[[Path, Exception], None] = lambda p, e: None,
            on_warning: Callable[[str], None] = lambda w: None, tick: Callable[[], None] = lambda: None) -> dict:
        """Read every file (one line per failure through ``on_error``) and report; use inside ``with``.

        A file that fails contributes nothing, not even the runs read before its
        bad one; its error (a UserError, or for a bug met on it the exception
        itself) goes to ``on_error`` and the other files go on.
        """
        self.seen.on_repeat = on_warning
        for path in files:
            mark = (len(self.entries), len(self.stored), len(self.compactions), self.imported, self.skipped,
                    len(self.reactions))
            try:
                self._read(path, Path(self._tmp.name), on_warning)
            except (ResourceError, MemoryError):
                raise
            except Exception as err:  # noqa: BLE001 - bad input, or a bug met on this file: the rest goes on
                del self.entries[mark[0]:], self.stored[mark[1]:], self.compactions[mark[2]:]
                del self.reactions[mark[5]:]
                self.imported, self.skipped = mark[3], mark[4]
                self.seen.forget(path)
                self.failed += 1
                on_error(path, err)
            tick()
        return self._report()

    def _read(self, path: Path, tmp: Path, on_warning) -> None:
        if path.is_file() and wl.is_workload_file(path):
            data = wl.read(path)
            data.path = str(path)
            if self.seen.is_repeat(data):
                return
            self.imported += 1
            c = calls_of(data)
            if c is None:
                self.skipped += 1
            else:
                self.stored.append(c)
            self._compactions(data)
            return
        for t in formats.iter_transcripts(path, self.sidechains):
            for w in t.warnings:
                on_warning(w)
            chosen = cal.choose(t.model, t.format, self.tokenizer, self.calibration)
            s = cal.sized(t, self.tokenizer, raw=chosen is None)
            sizes = np.rint(s.sizes(chosen))
            out = asm.assemble(s.layout, sizes)
            data = wl.build(t, self.tokenizer, chosen, s, sizes, out)
            data.path = str(path)
            if self.seen.is_repeat(data):
                continue
            for w in data.warnings:
                on_warning(w)
            self.imported += 1
            self._compactions(data)
            c = calls_of(data)
            if c is None:
                self.skipped += 1
                continue
            store = tmp / f"{len(self.entries)}.pickle"
            with open(store, "wb") as fh:
                pickle.dump(s, fh, protocol=pickle.HIGHEST_PROTOCOL)
            group = chosen.name if chosen else t.format  # one fit per model family (or format, uncalibrated)
            self.entries.append(_Entry(t.name, group, t.format, chosen, c, str(store)))

    def _compactions(self, data: wl.WorkloadData) -> None:
        self.reactions.append(reaction.collect(data))
        prompt = data.header.get("prompt_tokens") or []
        context = wl.context_before_calls(wl.sized_as(data, "calibrated"))
        for e in data.header.get("events") or []:
            if e.get("event") != "compaction":
                continue
            k = e["turn"]
            before = k - 1
            self.compactions.append({
                "transcript": data.name, "turn": k, "trigger": e.get("trigger", "unknown"),
                "pre_tokens": e.get("pre_tokens"),
                "api_prompt_before": prompt[before - 1] if 1 <= before <= len(prompt) else None,
                "ours_before": context[before - 1] if 1 <= before <= len(context) else None,
                "api_prompt_after": prompt[k - 1] if 1 <= k <= len(prompt) else None,
                "context_window": data.header.get("context_window"),
            })

    def _load(self, entry: _Entry) -> cal.Sized:
        with open(entry.store, "rb") as fh:
            return pickle.load(fh)

    def _cross_validate(self) -> dict[str, float]:
        """Per transcript name: its error with a calibration fitted on the other folds of its group."""
        errors: dict[str, float] = {}
        groups: dict[str, list[_Entry]] = {}
        for e in self.entries:
            groups.setdefault(e.group, []).append(e)
        for members in groups.values():
            members = sorted(members, key=lambda e: e.name)
            k = min(self.folds, len(members))
            if k < 2:
                continue
            for fold in range(k):
                train = [e for i, e in enumerate(members) if i % k != fold]
                test = [e for i, e in enumerate(members) if i % k == fold]
                try:
                    fitted = cal.fit(lambda train=train: (self._load(e) for e in train), self.tokenizer,
                                     name=members[0].group)
                except UserError:
                    continue
                for e in test:
                    s = self._load(e)
                    out = asm.assemble(s.layout, np.rint(s.sizes(fitted)))
                    c = calls_of_assembly(s, out, e.format, fitted.name)
                    if c is not None:
                        errors[_key(e)] = c.error
        return errors

    def fit_all(self) -> list[cal.Profile]:
        """One calibration per group, fitted on every transcript of the folder (for --fit-out)."""
        groups: dict[str, list[_Entry]] = {}
        for e in self.entries:
            groups.setdefault(e.group, []).append(e)
        profiles = []
        for name, members in sorted(groups.items()):
            fitted = cal.fit(lambda members=members: (self._load(e) for e in members), self.tokenizer, name=name)
            models = sorted({m.imported.model for m in members if m.imported.model})
            formats_seen = sorted({m.format for m in members})
            profiles.append(cal.Profile(name, tuple(models), tuple(formats_seen), f"{len(members)} transcripts",
                                        {self.tokenizer: fitted.to_json()}))
        return profiles

    def _report(self) -> dict:
        cv = self._cross_validate() if self.folds >= 2 else {}
        rows = []
        for e in self.entries:
            c = e.imported
            rows.append({"transcript": e.name, "model": c.model, "format": e.format, "profile": c.profile,
                         "calls": len(c.api), "anchored": c.anchored,
                         "error": round(cv[_key(e)], 6) if _key(e) in cv else None,
                         "error_as_imported": round(c.error, 6)})
        for c in self.stored:
            rows.append({"transcript": c.name, "model": c.model, "format": c.format, "profile": c.profile,
                         "calls": len(c.api), "anchored": c.anchored, "error": None,
                         "error_as_imported": round(c.error, 6)})
        cross = [r["error"] for r in rows if r["error"] is not None]
        imported = [r["error_as_imported"] for r in rows]
        by_profile = {}
        for r in rows:
            by_profile.setdefault(r["profile"], []).append(r)
        profiles = []
        for name, members in sorted(by_profile.items()):
            profiles.append({"profile": name, "transcripts": len(members),
                             "cross_validated": quantiles([r["error"] for r in members if r["error"] is not None]),
                             "as_imported": quantiles([r["error_as_imported"] for r in members])})
        headline = "cross_validated" if len(cross) >= MIN_CROSS_VALIDATED else "as_imported"
        head = quantiles(cross) if headline == "cross_validated" else quantiles(imported)
        return {
            "tokenizer": self.tokenizer,
            "calibration": self.calibration,
            "folds": self.folds,
            "transcripts": len(rows),
            "skipped": self.skipped,
            "failed": self.failed,
            "headline": headline,
            **head,
            "cross_validated": {"transcripts": len(cross), **quantiles(cross)},
            "as_imported": {"transcripts": len(imported), **quantiles(imported)},
            "calls": sum(r["calls"] for r in rows),
            "anchored_calls": sum(r["anchored"] for r in rows),
            "profiles": profiles,
            "compactions": self.compactions,
            "reaction": reaction.reaction_report(self.reactions, shipped_fit()),
            "per_transcript": rows,
        }


def _key(e: _Entry) -> str:
    return f"{e.store}"


def write_profiles(path: Path, profiles: list[cal.Profile]) -> None:
    """A calibration file (``--calibration FILE`` reads it back)."""
    from prunesim.io import output
    from prunesim.io.atomic import dumps_json

    data = {"prunesim_calibration": cal.FILE_VERSION, "profiles": [
        {"name": p.name, "models": list(p.models), "formats": list(p.formats), "fitted_on": p.fitted_on,
         "tokenizers": p.by_tokenizer} for p in profiles]}
    output.write_text(path, dumps_json(data), "--fit-out")
