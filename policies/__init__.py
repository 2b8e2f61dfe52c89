"""Prune policies and their registry: the one place a policy is named.

A policy is found by name, in this order:

* the built-in ones, in :data:`REGISTRY`;
* policies other packages register under the entry-point group
  ``prunesim.policies`` (:data:`ENTRY_POINT_GROUP`): a researcher's own package
  declares ``[project.entry-points."prunesim.policies"] my-policy = "my_pkg.module:MyPolicy"``
  and, once installed, ``--policy my-policy`` finds it;
* ``path/to/file.py:ClassName``: a class loaded from a Python file, for a quick
  script (see :func:`load_file_policy`).

Anything else is one :class:`UserError` naming what is known.

A policy with presets (the configurations a source ships) is registered once as
itself, reading its table's ``preset`` key, and once per preset as
``<name>:<preset>`` (for example ``clear-tool-uses:langchain``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

from prunesim.errors import UserError
from prunesim.policies.base import Policy, preset_variant
from prunesim.policies.clear_tool_uses import ClearToolUsesPolicy
from prunesim.policies.composed import SEPARATOR, composed, split
from prunesim.policies.llm_summary import LlmSummaryPolicy
from prunesim.policies.memory_pressure import MemoryPressurePolicy
from prunesim.policies.naive import NaivePolicy
from prunesim.policies.noop import NoopPolicy
from prunesim.policies.observation_masking import ObservationMaskingPolicy
from prunesim.policies.recency import RecencyPolicy
from prunesim.policies.slack_gated import SlackGatedPolicy
from prunesim.policies.tombstoned import GatedTombstonedPolicy, TombstonedPolicy

_CLASSES: tuple[type[Policy], ...] = (
    NoopPolicy,
    RecencyPolicy,
    NaivePolicy,
    SlackGatedPolicy,
    TombstonedPolicy,
    GatedTombstonedPolicy,
    ClearToolUsesPolicy,
    ObservationMaskingPolicy,
    LlmSummaryPolicy,
    MemoryPressurePolicy,
)

REGISTRY: dict[str, type[Policy]] = {}
for _cls in _CLASSES:
    REGISTRY[_cls.name] = _cls
    for _preset in _cls.presets:
        REGISTRY[f"{_cls.name}:{_preset}"] = preset_variant(_cls, _preset)

ALL = "all"

ENTRY_POINT_GROUP = "prunesim.policies"

# Loaded once per process: entry-point policies by name (a class, or the UserError that loading it gave),
# and policies loaded from files by their spec. Loading a user's module twice would run its code twice.
_entry_points: dict[str, type[Policy] | UserError] | None = None
_files: dict[tuple[str, str], type[Policy]] = {}  # (spec, resolved file) -> class
# resolved policy file -> the files of the modules its import brought in from its own folder (or one below it):
# its code as much as the file itself, so that a result records them (prunesim.io.reproduce) beside it
_companions: dict[str, tuple[str, ...]] = {}


def entry_point_policies() -> dict[str, type[Policy] | UserError]:
    """Policies registered by installed packages, by entry-point name; a broken one maps to its error."""
    global _entry_points
    if _entry_points is None:
        from importlib import metadata  # late: reading every package's metadata is for names not built in

        found: dict[str, type[Policy] | UserError] = {}
        for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            dist = getattr(ep.dist, "name", None) or "an installed package"
            where = f"entry point {ep.name!r} of {dist}"
            if ep.name in REGISTRY:
                found[ep.name] = UserError(where, None, f"the name {ep.name!r} is a built-in policy's; rename it")
                continue
            try:
                found[ep.name] = _check_class(ep.load(), where)
            except UserError as err:
                found[ep.name] = err
            except Exception as err:  # a plugin's own import failed: say so in one line, go on with the rest
                found[ep.name] = UserError(where, ep.value, f"cannot load: {_one_line(err)}")
        _entry_points = found
    return _entry_points


def is_file_spec(name: str) -> bool:
    """``path/to/file.py:ClassName``."""
    path, sep, cls = name.rpartition(":")
    return bool(sep) and path.endswith(".py") and cls.isidentifier()


def load_file_policy(spec: str, where: str = "--policy") -> type[Policy]:
    """The :class:`Policy` subclass ``ClassName`` defined in ``path/to/file.py`` (relative to the working folder).

    The file is imported once per process, as a module of its own; it may
    import prunesim and anything installed.
    """
    file, _, class_name = spec.rpartition(":")
    path = Path(file)
    if not path.is_file():
        raise UserError(where, spec, f"no such file {file!r}" if not path.exists() else f"{file!r} is not a file")
    resolved = path.resolve()
    # Known by the file it names, not by the words: the same relative spec from another folder is another file.
    key = (spec, str(resolved))
    if key in _files:
        return _files[key]
    module_name = "prunesim_user_" + hashlib.sha256(str(resolved).encode()).hexdigest()[:12] + "_" + (
        "".join(c if c.isalnum() else "_" for c in path.stem))
    module = sys.modules.get(module_name)
    if module is None:
        module_spec = importlib.util.spec_from_file_location(module_name, resolved)
        if module_spec is None or module_spec.loader is None:
            raise UserError(where, spec, f"cannot import {file!r} as Python")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module  # dataclasses and pickling look their module up by name
        before = set(sys.modules)
        try:
            module_spec.loader.exec_module(module)
        except (Exception, SystemExit) as err:  # SystemExit: a file that calls sys.exit() when imported
            del sys.modules[module_name]
            raise UserError(where, spec, f"cannot load {file}: {_one_line(err, resolved)}") from None
        new = [sys.modules[m] for m in set(sys.modules) - before]
        # and those imported before it (another policy file's, the same module): what its names come from
        named = [v if isinstance(v, type(sys)) else sys.modules.get(getattr(v, "__module__", None) or "")
                 for v in vars(module).values()]
        _companions[str(resolved)] = _imported_beside(resolved, new + [m for m in named if m is not None])
    cls = getattr(module, class_name, None)
    if cls is None:
        defined = sorted(n for n, v in vars(module).items() if isinstance(v, type) and issubclass(v, Policy)
                         and v is not Policy and v.__module__ == module.__name__)
        hint = f" (policies it defines: {', '.join(defined)})" if defined else " (it defines no Policy subclass)"
        raise UserError(where, spec, f"{file} has no class {class_name!r}{hint}")
    _files[key] = _check_class(cls, f"{where} {spec}")
    return cls


def _imported_beside(file: Path, modules: list) -> tuple[str, ...]:
    """The files of ``modules`` (those a policy file's import brought in) in the file's folder or below it."""
    found = set()
    for module in modules:
        origin = getattr(module, "__file__", None)
        if module.__name__.partition(".")[0] == "prunesim":  # prunesim's own (a checkout beside the file): versioned
            continue
        if origin:
            real = Path(origin).resolve()
            if real != file and real.is_relative_to(file.parent):
                found.add(str(real))
    return tuple(sorted(found))


def companion_files(path: str | Path) -> tuple[str, ...]:
    """The files (resolved) of the modules that the policy file ``path`` imported from its own folder or one below
    it when it was loaded; () for any other file, or a policy file not loaded in this process."""
    return _companions.get(str(Path(path).resolve()), ())


def _check_class(cls, where: str) -> type[Policy]:
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        what = (f"class {cls.__name__} is not a policy" if isinstance(cls, type)
                else f"names a value of type {type(cls).__name__}, not a class")
        raise UserError(where, None, f"{what}: a policy subclasses prunesim.policies.Policy")
    if cls.decide is Policy.decide:
        raise UserError(where, None, f"{cls.__name__} does not implement decide(view)")
    return cls


def _user_modules() -> dict[str, str]:
    """Modules holding policies a user supplied (files, installed plugins), each with the spec that named it."""
    found = {cls.__module__: spec for (spec, _), cls in _files.items()}
    for name, cls in (_entry_points or {}).items():
        if isinstance(cls, type):
            package = cls.__module__.partition(".")[0]
            if package != "prunesim":
                found.setdefault(package, f"entry point {name!r}")
    return found


def user_policy_fault(err: BaseException) -> UserError | None:
    """The one-line error for an exception a user's policy caused, or None when it is not one (a bug).

    A user's policy (a file given as ``path.py:ClassName``, or an installed
    plugin) is input like any other: when its own code raises, or the engine
    refuses what it answered, the user sees which policy and where, not a crash
    report blaming prunesim. The innermost frame that is either the user's
    code or prunesim's decides; frames of the standard library and other
    packages (numpy called wrongly) are passed over.
    """
    users = _user_modules()
    if not users:
        return None
    # SimPy re-raises a process's exception as a fresh copy whose cause is the original, which holds the
    # frames (and attributes) that tell where it came from.
    while type(err.__cause__) is type(err):
        err = err.__cause__
    cls = getattr(err, "policy", None)  # the engine's PolicyContractError names the policy it refused
    if isinstance(cls, type) and issubclass(cls, Policy):
        spec = users.get(cls.__module__) or users.get(cls.__module__.partition(".")[0])
        return UserError("--policy", spec, f"the policy broke its contract: {err}") if spec else None
    import traceback

    for frame, lineno in reversed(list(traceback.walk_tb(err.__traceback__))):
        module = frame.f_globals.get("__name__", "")
        spec = users.get(module) or users.get(module.partition(".")[0])
        if spec is not None:
            what = " ".join(f"{type(err).__name__}: {err}".split()) if str(err) else type(err).__name__
            return UserError("--policy", spec, f"the policy raised {what} ({Path(frame.f_code.co_filename).name}, "
                                               f"line {lineno}, in {frame.f_code.co_name})")
        if module == "prunesim" or module.startswith("prunesim."):
            return None
    return None


def _one_line(err: Exception, file: Path | None = None) -> str:
    """``Type: message``, with the line of ``file`` where it was raised when there is one."""
    text = f"{type(err).__name__}: {err}".splitlines()[0]
    if isinstance(err, SyntaxError):  # its message names the file and the line already
        return text
    lineno = None
    if file is not None:
        import traceback

        frames = [f for f in traceback.extract_tb(err.__traceback__) if Path(f.filename) == file]
        lineno = frames[-1].lineno if frames else None
    return f"{text} (line {lineno})" if lineno else text


def available() -> dict[str, type[Policy]]:
    """Every policy that can be named by a name: built-in, and registered by entry points (those that load)."""
    out = dict(REGISTRY)
    out.update((name, cls) for name, cls in entry_point_policies().items() if not isinstance(cls, UserError))
    return out


def tables(plugins: bool = False) -> dict[str, type]:
    """Every parameter table the known policies declare, by name: built-in ones, those loaded from files, and
    installed plugins' once they have been looked for (``plugins=True`` looks for them now).

    Looking for plugins reads every installed package's metadata, so it waits until a name is not built in.
    """
    found = available() if plugins or _entry_points is not None else REGISTRY
    return _tables([*found.values(), *_files.values()])


def builtin_tables() -> dict[str, type]:
    """The tables the built-in policies declare: every scenario has them, whatever else was loaded."""
    return _tables(REGISTRY.values())


def _tables(classes) -> dict[str, type]:
    out: dict[str, type] = {}
    for cls in classes:
        for name, table in cls.tables.items():
            if out.setdefault(name, table) is not table:
                raise UserError(f"policy {cls.name!r}", f"[{name}]",
                                "declares a table another policy declares differently; rename the table")
    return out


def get_policy(name: str | type[Policy], where: str = "--policy") -> type[Policy]:
    """The policy named ``name`` (see the module docstring), or the Policy subclass given; a UserError otherwise."""
    if isinstance(name, type):
        return _check_class(name, where)
    if name in REGISTRY:
        return REGISTRY[name]
    if is_file_spec(name) and (SEPARATOR not in name or Path(name.rpartition(":")[0]).is_file()):
        return load_file_policy(name, where)
    found = entry_point_policies().get(name)
    if isinstance(found, UserError):
        raise found
    if found is not None:
        return found
    if SEPARATOR in name:
        return composed_policy(name, where)
    known = ", ".join(sorted(available()))
    raise UserError(where, None, f"unknown policy {name!r} (known: {known}; or path/to/file.py:ClassName)")


def composed_policy(spec: str, where: str = "--policy") -> type[Policy]:
    """``a+b``: the policies ``a`` and ``b`` run as one, in that order (:mod:`prunesim.policies.composed`)."""
    def known(name: str) -> bool:  # a file spec of one word is a part even when its file is missing (said below)
        return name in REGISTRY or name in entry_point_policies() or (is_file_spec(name) and (
            SEPARATOR not in name or Path(name.rpartition(":")[0]).is_file()))

    try:
        names = split(spec, known)
    except UserError as err:
        hint = "" if "empty" in err.problem else (f" (known: {', '.join(sorted(available()))}; '+' composes "
                                                  "policies, ',' separates them)")
        raise UserError(where, spec, err.problem + hint) from None
    parts = []
    for name in names:
        try:
            parts.append(get_policy(name, where))
        except UserError as err:  # a part that exists but does not load: the part at fault, then why
            raise UserError(where, spec, f"part {name!r}: {err.problem}") from None
    try:
        return composed(SEPARATOR.join(names), parts)
    except UserError as err:
        raise UserError(where, spec, err.problem) from None


def policy_name(policy: str | type[Policy]) -> str:
    """The name a run records for ``policy``: the name given, or a class's own ``name``."""
    return policy.name if isinstance(policy, type) else policy


def every_policy() -> list[str]:
    """What ``--policies all`` means: every registered policy, each preset on its own; a policy with presets
    is listed through them (by itself it is one of them, under its table's default preset)."""
    return [name for name, cls in REGISTRY.items() if not (cls.presets and cls.preset is None)]


def parse_names(text: str, where: str = "--policies") -> list[str]:
    """A comma-separated list of policy names (``all`` for :func:`every_policy`), each checked."""
    # A composition is named one way whatever the spaces around its '+' (so that it is given twice only once).
    names = [SEPARATOR.join(w.strip() for w in n.split(SEPARATOR)) for n in text.split(",")]
    if not text.strip() or any(not n for n in names):
        raise UserError(where, text, "expected a comma-separated list of policy names")
    out: list[str] = []
    for name in names:
        for one in every_policy() if name == ALL else [name]:
            get_policy(one, where)
            if one in out:
                raise UserError(where, text, f"a policy is given twice ({one!r})")
            out.append(one)
    return out


__all__ = ["ALL", "ENTRY_POINT_GROUP", "REGISTRY", "Policy", "available", "every_policy", "get_policy",
           "is_file_spec", "load_file_policy", "parse_names", "policy_name", "tables", "user_policy_fault"]
