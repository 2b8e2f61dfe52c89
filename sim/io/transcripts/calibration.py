"""Calibration: from raw counts to the tokens a model's API bills for each message part.

A raw counter (:mod:`.tokens`) counts text in its own units. An API counts in
its model's tokenizer and adds what the transcript never shows. A calibration
sizes a part as::

    tokens = weights[kind] . features(text) + frame[kind]       (text parts)
    tokens = recorded size + frame[kind]                         (parts sized by the source)

* ``features``: for ``pieces`` the counts of its piece classes (a linear model
  over them fits a provider's tokenizer far better than one scale: whitespace,
  digits and long identifiers are split differently by each tokenizer); for an
  exact counter, its count alone, with one scale per kind (prose, tool calls
  and tool outputs tokenize differently).
* ``frame``: the per-message framing (role and separator tokens) and, for tool
  calls and outputs, the wrapper around them: a constant per part.
* Recorded sizes: an assistant message whose output tokens the API recorded is
  sized from them, less the reasoning tokens that the API bills but does not
  keep (see the parsers); images by their documented size.

Profiles (model families) ship in ``calibrations.json``, fitted on the dev
transcripts with :func:`fit` (``prunesim fidelity DIR --fit-out FILE``
regenerates one). A profile applies to a transcript whose model name contains
one of its ``models`` substrings, else whose format is one of its ``formats``;
a transcript no profile matches is counted raw.

:func:`fit` works in two stages, both non-negative least squares: first on the
growth of the prompt between consecutive calls (robustly: growths that the
parts cannot explain, injected or removed unseen, are left out, and so is the
growth across a recorded compaction, which measures the runtime's rewrite of
the prompt, summary and unseen restorations, not the parts), then on the
prompt counts themselves, weighted by 1/count (the relative error that
fidelity reports), with the hidden and reconciled content of
:mod:`.assemble` fixed at the first stage's estimate.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
from prunesim.errors import UserError
from prunesim.io import inputs
from prunesim.io.transcripts import assemble as asm
from prunesim.io.transcripts import tokens as tok
from prunesim.io.transcripts.parts import Transcript

KINDS = ("system", "user", "reasoning", "tool_call", "tool_output", "summary")
MIN_PARTS = 30  # a kind needs this many parts in the fitting data to get its own parameters
MIN_FEATURE_MASS = 5000  # a piece class needs this many occurrences to get a fitted weight
SCALED_KINDS = ("user", "reasoning", "tool_call", "tool_output")  # kinds that may get a scale of their own
FILE_VERSION = 1


@dataclass(frozen=True)
class Calibration:
    """One model family's sizes for one raw counter."""

    name: str
    tokenizer: str
    weights: dict[str, tuple[float, ...]]  # per kind
    frames: dict[str, float]  # per kind
    fitted_on: str = ""

    def size(self, kind: str, feats, fixed: float | None) -> float:
        frame = self.frames.get(kind, 0.0)
        if fixed is not None:
            return fixed + frame
        w = self.weights.get(kind) or self.weights.get("user") or ()
        return float(np.dot(w, feats)) + frame if w else 0.0

    def to_json(self) -> dict:
        return {"weights": {k: [round(v, 6) for v in w] for k, w in self.weights.items()},
                "frames": {k: round(v, 3) for k, v in self.frames.items()}}


# -- shipped and user profiles ------------------------------------------------------
@dataclass(frozen=True)
class Profile:
    name: str
    models: tuple[str, ...]
    formats: tuple[str, ...]
    fitted_on: str
    by_tokenizer: dict[str, dict]

    def matches(self, model: str, fmt: str) -> int:
        """2: the model name matches; 1: the format does (the model being unknown or unmatched); 0: neither."""
        low = model.lower()
        if any(m in low for m in self.models):
            return 2
        return 1 if fmt in self.formats else 0

    def calibration(self, tokenizer: str) -> Calibration | None:
        entry = self.by_tokenizer.get(tokenizer)
        if entry is None:
            return None
        weights = {k: tuple(float(x) for x in v) for k, v in entry["weights"].items()}
        frames = {k: float(v) for k, v in entry["frames"].items()}
        return Calibration(self.name, tokenizer, weights, frames, self.fitted_on)


def load_profiles(path: Path | None = None) -> list[Profile]:
    """The shipped profiles, or those of a calibration file (a UserError names the file and field)."""
    if path is None:
        text = resources.files("prunesim.io.transcripts").joinpath("calibrations.json").read_text("utf-8")
        where = "calibrations.json (shipped)"
    else:
        where = str(path)
        try:
            text = inputs.read_text(path, "calibration file")
        except UserError as err:
            raise UserError("--calibration", where, err.problem) from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:  # malformed, a number of thousands of digits, nested too deep
        raise UserError(where, None, f"not a calibration file: {inputs.json_problem(err)}") from None
    if not isinstance(data, dict) or data.get("prunesim_calibration") != FILE_VERSION:
        raise UserError(where, "prunesim_calibration", f"not a prunesim calibration file (version {FILE_VERSION})")
    profiles = data.get("profiles")
    if not isinstance(profiles, list) or not profiles:
        raise UserError(where, "profiles", "must be a non-empty list")
    return [_profile(p, f"{where}: profiles[{i}]") for i, p in enumerate(profiles)]


def _profile(p, where: str) -> Profile:
    if not isinstance(p, dict) or not isinstance(p.get("name"), str):
        raise UserError(where, "name", "missing or not a string")
    models = p.get("models", [])
    formats = p.get("formats", [])
    if not (isinstance(models, list) and all(isinstance(m, str) for m in models)):
        raise UserError(where, "models", "must be a list of strings")
    if not (isinstance(formats, list) and all(isinstance(m, str) for m in formats)):
        raise UserError(where, "formats", "must be a list of strings")
    by_tok = p.get("tokenizers")
    if not isinstance(by_tok, dict) or not by_tok:
        raise UserError(where, "tokenizers", "must be an object with one entry per tokenizer")
    for name, entry in by_tok.items():
        if name not in tok.NAMES:
            raise UserError(where, f"tokenizers.{name}", "unknown tokenizer")
        n = len(tok.feature_names(name))
        if not isinstance(entry, dict) or not isinstance(entry.get("weights"), dict) or not isinstance(
                entry.get("frames"), dict):
            raise UserError(where, f"tokenizers.{name}", "needs 'weights' and 'frames' objects")
        for kind, w in entry["weights"].items():
            if kind not in KINDS or not isinstance(w, list) or len(w) != n or not all(_finite(x) for x in w):
                raise UserError(where, f"tokenizers.{name}.weights.{kind}",
                                f"must be a known kind with {n} finite non-negative number(s)")
            if max(w, default=0) > MAX_WEIGHT:
                raise UserError(where, f"tokenizers.{name}.weights.{kind}", f"{max(w):g} tokens per counted "
                                f"character or word is more than any tokenizer writes (at most {MAX_WEIGHT:g})")
        for kind, f in entry["frames"].items():
            if kind not in KINDS or not _finite(f):
                raise UserError(where, f"tokenizers.{name}.frames.{kind}", "must be a known kind and a finite "
                                "non-negative number")
            if f > MAX_FRAME:
                raise UserError(where, f"tokenizers.{name}.frames.{kind}", f"{f:g} tokens of framing per message "
                                f"is more than a context window holds (at most {MAX_FRAME:g})")
    return Profile(p["name"], tuple(m.lower() for m in models), tuple(formats), str(p.get("fitted_on", "")),
                   by_tok)


# Bounds that only a corrupt file crosses: a tokenizer writes a few tokens per character at most (one per
# UTF-8 byte), and no message's framing outweighs a whole window; larger sizes overflowed into the workload.
MAX_WEIGHT = 1_000.0
MAX_FRAME = 1_000_000.0


def _finite(x) -> bool:
    if not isinstance(x, int | float) or isinstance(x, bool):
        return False
    try:
        return math.isfinite(x) and x >= 0
    except OverflowError:  # an integer of hundreds of digits: no float holds it, so no size a file may hold
        return False


_LOADED: dict[str, list[Profile]] = {}  # shipped ("auto") and calibration files, read once per process


def _profiles(setting: str) -> list[Profile]:
    if setting not in _LOADED:
        _LOADED[setting] = load_profiles(None if setting == "auto" else Path(setting))
    return _LOADED[setting]


def choose(model: str, fmt: str, tokenizer: str, setting: str = "auto") -> Calibration | None:
    """The calibration for a transcript: ``setting`` is ``auto`` (shipped profiles), ``none`` (raw
    counts) or a calibration file. None means raw counts."""
    if setting == "none":
        return None
    profiles = _profiles(setting)
    ranked = sorted(((p.matches(model, fmt), i) for i, p in enumerate(profiles)), key=lambda r: (-r[0], r[1]))
    if setting == "auto" and (not ranked or ranked[0][0] == 0):
        return None
    best = profiles[ranked[0][1]] if ranked and (ranked[0][0] or setting != "auto") else None
    return best.calibration(tokenizer) if best else None


def check_setting(setting: str, tokenizer: str) -> None:
    """Fail early (one line) on a bad ``--calibration``; a file must hold the tokenizer's entry."""
    if setting in ("auto", "none"):
        return
    _LOADED.pop(setting, None)  # a file written since (fidelity --fit-out) is read afresh
    profiles = _profiles(setting)
    if not any(tokenizer in p.by_tokenizer for p in profiles):
        raise UserError("--calibration", setting, f"holds no entry for tokenizer {tokenizer!r}")


# -- a transcript's parts as numbers ---------------------------------------------------
@dataclass
class Sized:
    """A transcript's parts as arrays: features of text parts, sizes of recorded ones, the layout."""

    name: str
    model: str
    layout: asm.Layout
    feats: np.ndarray  # parts x features (zeros for recorded and hidden parts)
    fixed: np.ndarray  # recorded size, nan for text parts
    extra: np.ndarray  # documented tokens beside the text (images)
    raw: np.ndarray  # the raw count of each part (what an uncalibrated import stores)

    def sizes(self, cal: Calibration | None) -> np.ndarray:
        """Every part's tokens under a calibration (raw counts when None)."""
        out = np.empty(len(self.layout.kind))
        for i, kind in enumerate(self.layout.kind):
            fixed = None if np.isnan(self.fixed[i]) else float(self.fixed[i])
            if cal is None:
                out[i] = self.raw[i]
            else:
                out[i] = cal.size(kind, self.feats[i], fixed) + self.extra[i]
        out[self.layout.hidden] = 0.0
        return np.maximum(out, 0.0)


def sized(t: Transcript, tokenizer: str, raw: bool = True) -> Sized:
    """Featurize a transcript's parts once (the costly step); calibrations are applied to the arrays.

    ``raw``: also keep the raw counts (what an uncalibrated import stores); they cost a second pass
    for ``pieces``, whose raw count is not one of its features.
    """
    feat = tok.features(tokenizer)
    count = tok.get_counter(tokenizer)
    single = len(tok.feature_names(tokenizer)) == 1
    nf = len(tok.feature_names(tokenizer))
    n = len(t.parts)
    feats = np.zeros((n, nf))
    fixed = np.full(n, np.nan)
    extra = np.zeros(n)
    counts = np.zeros(n)
    share = _kept_output_shares(t)
    for i, p in enumerate(t.parts):
        extra[i] = p.extra_tokens
        if p.hidden:
            continue
        if p.tokens is not None:
            fixed[i] = p.tokens
            counts[i] = p.tokens
        elif i in share:
            fixed[i] = share[i]
            if raw:
                counts[i] = count(p.text) + p.extra_tokens
        else:
            feats[i] = feat(p.text)
            if raw:
                counts[i] = (feats[i, 0] if single else count(p.text)) + p.extra_tokens
    prompt = np.array([t.prompt_tokens.get(k, np.nan) for k in range(1, t.turns + 1)], float)
    prompt[prompt <= 0] = np.nan
    layout = asm.Layout(
        kind=[p.kind for p in t.parts],
        turn=np.array([p.turn for p in t.parts], int),
        dropped_at=np.array([p.dropped_at for p in t.parts], int),
        hidden=np.array([p.hidden for p in t.parts], bool),
        prompt=prompt,
        turns=t.turns,
        reconcile=t.format in asm.RECONCILED_FORMATS,
        compactions=sorted(e["turn"] for e in t.events if e.get("event") == "compaction"),
    )
    return Sized(t.name, t.model, layout, feats, fixed, extra, counts)


def _kept_output_shares(t: Transcript) -> dict[int, float]:
    """Part index -> its share of its call's recorded kept output (split by text length)."""
    by_call: dict[int, list[int]] = {}
    for i, p in enumerate(t.parts):
        if p.turn in t.kept_output and p.kind in ("reasoning", "tool_call") and p.tokens is None and not p.hidden:
            by_call.setdefault(p.turn, []).append(i)
    share: dict[int, float] = {}
    for k, idx in by_call.items():
        lengths = np.array([len(t.parts[i].text) + 1.0 for i in idx])
        for i, w in zip(idx, lengths / lengths.sum(), strict=True):
            share[i] = t.kept_output[k] * float(w)
    return share


# -- fitting -----------------------------------------------------------------------------
PRIORS = {
    tok.DEFAULT: (1.0, 0.25, 0.0, 1 / 3, 1.0, 0.0, 1 / 6, 1.0, 1.0),  # close to count_pieces
    "chars": (1 / tok.CHARS_PER_TOKEN,),
}


class _Params:
    """The parameter vector's layout: text-weight groups, then one frame per kind with enough parts."""

    def __init__(self, data: Iterable[Sized], tokenizer: str):
        self.nf = len(tok.feature_names(tokenizer))
        text_parts = dict.fromkeys(KINDS, 0)
        all_parts = dict.fromkeys(KINDS, 0)
        self.calls = 0
        mass = np.zeros(self.nf)
        for s in data:
            self.calls += int(np.isfinite(s.layout.prompt).sum())
            mass += np.abs(s.feats).sum(axis=0)
            for i, kind in enumerate(s.layout.kind):
                if s.layout.hidden[i]:
                    continue
                all_parts[kind] += 1
                text_parts[kind] += bool(np.isnan(s.fixed[i]))
        if tokenizer == tok.DEFAULT:  # one set of class weights for every kind
            self.groups = ["all"]
            self.group_of = dict.fromkeys(KINDS, 0)
        else:  # one scale per kind with enough text; system prompts and summaries are prose, like user text
            own = [k for k in SCALED_KINDS if text_parts[k] >= MIN_PARTS]
            if not own:
                own = [max(KINDS, key=lambda k: text_parts[k])]
            fallback = "user" if "user" in own else own[0]
            self.groups = own
            self.group_of = {k: own.index(k if k in own else fallback) for k in KINDS}
        self.framed = [k for k in KINDS if all_parts[k] >= MIN_PARTS]
        prior = np.asarray(PRIORS.get(tokenizer, (1.0,)), float)
        # A feature the data hardly shows (non-ASCII letters in English runs) keeps its prior weight:
        # fitted on a handful of characters it would size every text full of them.
        self.pinned = np.where(mass < MIN_FEATURE_MASS, prior, np.nan) if self.nf > 1 else np.full(1, np.nan)
        self.width = len(self.groups) * self.nf + len(self.framed)
        self.prior = np.zeros(self.width)
        for g in range(len(self.groups)):
            self.prior[g * self.nf:(g + 1) * self.nf] = np.where(np.isnan(self.pinned), prior, 0.0)

    def design(self, s: Sized) -> tuple[np.ndarray, np.ndarray]:
        """(phi, const): each part's size as phi @ theta + const."""
        n = len(s.layout.kind)
        kind_index = np.array([KINDS.index(k) for k in s.layout.kind], int)
        text = np.isnan(s.fixed) & ~s.layout.hidden
        phi = np.zeros((n, self.width))
        const = np.where(np.isnan(s.fixed), 0.0, s.fixed) + s.extra
        free = np.isnan(self.pinned)
        feats = np.where(free, s.feats, 0.0)
        const[text] += s.feats[text] @ np.where(free, 0.0, self.pinned)
        group = np.array([self.group_of[k] for k in KINDS])[kind_index]
        for g in range(len(self.groups)):
            rows = text & (group == g)
            phi[rows, g * self.nf:(g + 1) * self.nf] = feats[rows]
        base = len(self.groups) * self.nf
        for j, kind in enumerate(self.framed):
            phi[(kind_index == KINDS.index(kind)) & ~s.layout.hidden, base + j] = 1.0
        phi[s.layout.hidden] = 0.0
        const[s.layout.hidden] = 0.0
        return phi, const

    def calibration(self, theta: np.ndarray, name: str, tokenizer: str, fitted_on: str) -> Calibration:
        weights = {}
        for k in KINDS:
            g = self.group_of[k]
            fitted = theta[g * self.nf:(g + 1) * self.nf]
            weights[k] = tuple(float(x) for x in np.where(np.isnan(self.pinned), fitted, self.pinned))
        base = len(self.groups) * self.nf
        frames = {k: (float(theta[base + self.framed.index(k)]) if k in self.framed else 0.0) for k in KINDS}
        return Calibration(name, tokenizer, weights, frames, fitted_on)


REGULARIZATION = 0.1  # stage two's pull towards stage one, per fitted call (docs/transcripts.md)


def fit(data: Callable[[], Iterable[Sized]], tokenizer: str, name: str = "fitted",
        fitted_on: str = "") -> Calibration:
    """Fit a calibration to transcripts with recorded prompt counts (see the module docstring).

    ``data`` returns a fresh iterator over the transcripts at each call: the fit
    passes over them several times and never holds more than one at once.
    """
    params = _Params(data(), tokenizer)
    if params.calls < 2:
        raise UserError("fit", None, "needs transcripts with at least two recorded prompt counts")
    theta = _fit_growth(data, params)
    for _ in range(2):
        theta = _fit_counts(data, params, theta)
    return params.calibration(theta, name, tokenizer, fitted_on)


def _growth_rows(s: Sized, phi: np.ndarray, const: np.ndarray):
    """Per pair of consecutive counted calls: (coefficients, constant, API growth) of what arrived and left."""
    lay = s.layout
    hidden = bool(lay.hidden.any())
    start = lay.first_counted + 1 if hidden else 1
    for k in range(start, lay.turns + 1):
        api = lay.prompt[k - 1]
        prev = lay.prompt[k - 2] if k > 1 else 0.0
        if not (np.isfinite(api) and np.isfinite(prev)) or k in lay.compactions:
            continue  # across a compaction: one row as large as the whole conversation, and not about its parts
        a, c = np.zeros(phi.shape[1]), 0.0
        for i in lay.arrivals[k]:
            if lay.dropped_at[i] != k:
                a += phi[i]
                c += const[i]
        for i in lay.drops[k]:
            if lay.turn[i] < k - 1:
                a -= phi[i]
                c -= const[i]
        yield a, c, float(api - prev)


def _rows(data, params: _Params):
    """Per transcript: its growth rows as arrays (coefficients, constants, API growth)."""
    for s in data():
        phi, const = params.design(s)
        rows = list(_growth_rows(s, phi, const))
        if rows:
            yield np.array([r[0] for r in rows]), np.array([r[1] for r in rows]), np.array([r[2] for r in rows])


def _fit_growth(data, params: _Params) -> np.ndarray:
    """Stage one: robust NNLS on the prompt's growth between calls, from the prior scaled to the data."""
    theta = params.prior.copy()
    ratios = []
    for A, c, y in _rows(data, params):
        est = A @ theta + c
        ok = (est > 50) & (y > 0)
        ratios.extend((y[ok] / est[ok]).tolist())
    if ratios:
        theta *= float(np.median(ratios))
    for _ in range(4):
        gram = _Gram(params.width)
        for A, c, y in _rows(data, params):
            est = A @ theta + c
            keep = np.abs(y - est) <= asm.TAU_ABS + asm.TAU_REL * np.abs(est)  # unexplained growth left out
            gram.add_rows(A[keep], y[keep] - c[keep])
        theta = gram.solve()
    return theta


def _fit_counts(data, params: _Params, theta1: np.ndarray) -> np.ndarray:
    """Stage two: NNLS on the counts, weighted by 1/count, pulled towards stage one's estimate."""
    gram = _Gram(params.width)
    for s in data():
        phi, const = params.design(s)
        out = asm.assemble(s.layout, np.maximum(phi @ theta1 + const, 0.0), phi, const)
        if out.rows:
            A = np.array([r[0] for r in out.rows])
            c = np.array([r[1] for r in out.rows])
            api = np.array([r[2] for r in out.rows])
            gram.add_rows(A / api[:, None], (api - c) / api)
    if gram.n == 0:
        return theta1
    scale = np.maximum(np.abs(theta1), 1e-3)
    weight = np.sqrt(REGULARIZATION * gram.n) / scale
    for j in np.flatnonzero(gram.used):
        row = np.zeros(params.width)
        row[j] = weight[j]
        gram.add(row, weight[j] * theta1[j])
    return gram.solve()


class _Gram:
    """Normal equations accumulated row by row: least squares without keeping the rows."""

    def __init__(self, width: int):
        self.ata = np.zeros((width, width))
        self.atb = np.zeros(width)
        self.used = np.zeros(width, bool)
        self.n = 0

    def add(self, a: np.ndarray, b: float) -> None:
        self.add_rows(a[None, :], np.array([b]))

    def add_rows(self, A: np.ndarray, b: np.ndarray) -> None:
        self.ata += A.T @ A
        self.atb += A.T @ b
        self.used |= (A != 0).any(axis=0)
        self.n += len(b)

    def solve(self) -> np.ndarray:
        return nnls_gram(self.ata, self.atb, self.used)


def nnls_gram(ata: np.ndarray, atb: np.ndarray, usable: np.ndarray | None = None,
              max_rounds: int = 200) -> np.ndarray:
    """Non-negative least squares from the normal equations (Lawson and Hanson's active set):
    min |Ax - b| subject to x >= 0, given A'A and A'b. Parameters not usable stay at zero."""
    n = len(atb)
    usable = np.ones(n, bool) if usable is None else usable
    x = np.zeros(n)
    free = np.zeros(n, bool)
    tol = 1e-12 * max(1.0, float(np.abs(atb).max(initial=0.0)))
    for _ in range(max_rounds):
        grad = atb - ata @ x
        candidates = ~free & usable & (grad > tol)
        if not candidates.any():
            break
        free[np.argmax(np.where(candidates, grad, -np.inf))] = True
        for _ in range(max_rounds):
            z = np.zeros(n)
            sub = ata[np.ix_(free, free)]
            z[free] = np.linalg.lstsq(sub, atb[free], rcond=None)[0]
            if (z[free] > 0).all():
                x = z
                break
            neg = free & (z <= 0)
            alpha = float(np.min(x[neg] / (x[neg] - z[neg])))
            x = x + alpha * (z - x)
            free &= x > 1e-12
            x[~free] = 0.0
    return x


def nnls(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Non-negative least squares of rows A, b (see nnls_gram)."""
    return nnls_gram(A.T @ A, A.T @ b, np.abs(A).sum(axis=0) > 0)
