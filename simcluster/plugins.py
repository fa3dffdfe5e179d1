"""From a spec to a policy or placement class: the one resolver every entry point calls.

A *spec* names a plug-in in one of these forms, tried in this order:

* a built-in name (``srtf``; ``lucid-sim policies`` lists them);
* ``path/to/file.py`` (the file defines exactly one policy class) or ``path/to/file.py:ClassName``;
* ``package.module:ClassName`` (an importable module);
* a name that an installed package registers under the entry-point group ``simcluster.policies``
  (``simcluster.placements`` for placements), as pytest's ``pytest11`` or Flake8's extensions do.

A relative path is relative to the current directory; :func:`absolute_spec` rewrites it as an absolute
one, so that a sweep's workers (other processes, other machines) load the same file.  A class given
directly (the Python API: ``SimConfig(policy=MyPolicy)``) is remembered under a spec naming where it
was defined (:func:`spec_of`).

>>> resolve_policy("srtf").__name__
'ShortestRemainingTimeFirst'
>>> resolve_policy("no-such-policy")
Traceback (most recent call last):
...
simcluster.plugins.PluginError: unknown policy 'no-such-policy'; choose one of: fifo, ... — or give a file (path/to/file.py[:Class]), package.module:Class, or the name of an installed plug-in (entry-point group simcluster.policies)
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import random
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, cast

if TYPE_CHECKING:
    from simcluster.placement.base import Placement
    from simcluster.policies.base import Policy

Kind = Literal["policy", "placement"]
GROUPS = {"policy": "simcluster.policies", "placement": "simcluster.placements"}


class PluginError(ValueError):
    """A spec that names no plug-in, or a plug-in that cannot be loaded; the message says which and why."""


@dataclass(frozen=True)
class Origin:
    """Where a plug-in class came from: what a result records so that it names exactly the code that made it."""

    spec: str  # as resolved (a file's path made absolute)
    source: str  # built-in, file, module, entry point, class
    location: str  # the file, module or distribution it came from
    sha256: str | None = None  # of the plug-in's file, where it has one

    def as_dict(self) -> dict[str, Any]:
        return {"spec": self.spec, "source": self.source, "location": self.location, "sha256": self.sha256}


_CLASSES: dict[tuple[Kind, str], tuple[type, Origin]] = {}  # resolved specs, and classes given directly
_MODULES: dict[tuple[str, str], ModuleType] = {}  # (file path, content digest) → the module loaded from it


def resolve_policy(spec: str | type) -> type[Policy]:
    """The policy class a spec (or a class) names; :class:`PluginError` if none."""
    return cast("type[Policy]", resolve(spec, "policy")[0])


def resolve_placement(spec: str | type) -> type[Placement]:
    """The placement class a spec (or a class) names; :class:`PluginError` if none."""
    return cast("type[Placement]", resolve(spec, "placement")[0])


def make_placement(spec: str, rng: random.Random) -> Any:
    """A placement object: the class ``spec`` names (a built-in name, a file or module:Class), seeded by ``rng``.
    (Here, not in simcluster.placement: placements never import the resolver, which knows policies too.)"""
    return resolve_placement(spec)(rng)


def origin_of(spec: str | type, kind: Kind = "policy") -> Origin:
    return resolve(spec, kind)[1]


def resolve(spec: str | type, kind: Kind) -> tuple[type, Origin]:
    """(class, origin) of ``spec``; classes loaded from files are loaded once per file content."""
    if isinstance(spec, type):
        return spec, _remember(spec, kind)
    if not isinstance(spec, str) or not spec.strip():
        raise PluginError(f"a {kind} spec must be a name, a file.py, or module:Class; got {spec!r}")
    spec = spec.strip()
    registry = _registry(kind)
    if spec in registry:
        cls = registry.get(spec)
        return cls, Origin(spec, "built-in", cls.__module__)
    key = (kind, spec)
    if key in _CLASSES and not _is_file_spec(spec):
        return _CLASSES[key]
    if _is_file_spec(spec):
        found = _from_file(spec, kind)
    elif ":" in spec:
        found = _from_module(spec, kind)
    else:
        found = _from_entry_point(spec, kind)
    _CLASSES[key] = found
    return found


def absolute_spec(spec: str | type, kind: Kind = "policy", base: Path | None = None) -> str:
    """``spec`` as a string that resolves the same from any directory: a file's path made absolute
    (relative to ``base``, default the current directory); a class as :func:`spec_of` names it."""
    if isinstance(spec, type):
        return _remember(spec, kind).spec
    if _is_file_spec(spec):
        path, _, name = _split_file_spec(spec)
        full = (base or Path.cwd()) / Path(path).expanduser()
        return str(full.resolve()) + (f":{name}" if name else "")
    return spec


def spec_of(cls: type, kind: Kind = "policy") -> str:
    """The spec under which a class given directly is known: ``module:Class`` for a class of an importable
    module, ``/path/file.py:Class`` for one defined in a script or a file loaded by path."""
    return _remember(cls, kind).spec


def display_name(spec: str | type, kind: Kind = "policy") -> str:
    """A short name for tables and folder names: a built-in's name, else the plug-in's ``name`` attribute when it
    sets one, else its class name."""
    return name_of(*resolve(spec, kind), kind)


def name_of(cls: type, origin: Origin, kind: Kind = "policy") -> str:
    """:func:`display_name` of a class already resolved (with its origin)."""
    if origin.source == "built-in":
        return str(origin.spec)
    name = getattr(cls, "name", "?")
    registry = _registry(kind)
    if isinstance(name, str) and name in registry and registry.get(name) is not cls:
        return cls.__name__  # a built-in's name, inherited by subclassing it: not this class's own
    return name if isinstance(name, str) and name.strip() and name != "?" else cls.__name__


def policy_label(spec: str | type, kind: Kind = "policy") -> str:
    """How tables name a policy given as ``spec``: :func:`display_name` where the spec loads, else the text as
    given (a plug-in's declared name, as a table shows it: ``--baseline srtf-cap``)."""
    try:
        return display_name(spec, kind)
    except PluginError:
        return spec if isinstance(spec, str) else getattr(spec, "__name__", str(spec))


def installed(kind: Kind) -> dict[str, metadata.EntryPoint]:
    """Entry points that installed packages register under the kind's group, by name."""
    return {ep.name: ep for ep in metadata.entry_points(group=GROUPS[kind])}


def base_class(kind: Kind) -> type:
    if kind == "policy":
        from simcluster.policies.base import Policy

        return Policy
    from simcluster.placement.base import Placement

    return Placement


# --- the forms of a spec ----------------------------------------------------------------------------

def _registry(kind: Kind) -> Any:
    if kind == "policy":
        from simcluster.policies import POLICIES

        return POLICIES
    from simcluster.placement import PLACEMENTS

    return PLACEMENTS


def _is_file_spec(spec: str) -> bool:
    return _split_file_spec(spec)[0].endswith(".py")


def _split_file_spec(spec: str) -> tuple[str, str, str]:
    """(path, ':', class name) — a class name follows the last ':' only when the path before it ends in .py
    (a Windows drive's colon is part of the path)."""
    path, sep, name = spec.rpartition(":")
    if sep and path.endswith(".py") and name.isidentifier():
        return path, sep, name
    return spec, "", ""


def _from_file(spec: str, kind: Kind) -> tuple[type, Origin]:
    path_text, _, name = _split_file_spec(spec)
    path = Path(path_text).expanduser().resolve()
    if not path.is_file():
        raise PluginError(f"{kind} {spec!r}: no such file {path}")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    module = _MODULES.get((str(path), digest))
    if module is None:
        module = _load_file(path, digest, kind)
        _MODULES[(str(path), digest)] = module
    cls = _pick_class(module, name, kind, str(path))
    return cls, Origin(f"{path}:{cls.__name__}" if name else str(path), "file", str(path), digest)


def _load_file(path: Path, digest: str, kind: Kind) -> ModuleType:
    """Import a plug-in file as a module of its own (named after the file and its content, so two files of one
    name, or two versions of one file, never clash).  The file's folder is put on ``sys.path`` while it loads, so
    that it may import its neighbours."""
    module_name = f"simcluster_plugin_{_identifier(path.stem)}_{digest[:12]}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise PluginError(f"{kind} file {path}: cannot be imported as Python")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module  # (dataclasses and pickling look classes up by module)
    folder = str(path.parent)
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:  # compiled with its writes to views checked at run time (simcluster.views.compile_plugin)
        from simcluster.views import compile_plugin, plugin_globals

        code = compile_plugin(path.read_bytes(), str(path))
        vars(module).update(plugin_globals())
        exec(code, vars(module))  # noqa: S102 — the plug-in's own file, as importing it would run it
    except Exception as exc:
        del sys.modules[module_name]
        where = _plugin_line(exc, str(path))
        raise PluginError(f"{kind} file {path}: importing it raised {type(exc).__name__}: {exc}{where}") from exc
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)
    return module


def _plugin_line(exc: BaseException, filename: str) -> str:
    """`` (at FILE line N)`` for the innermost traceback frame in ``filename``, else ''."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return f" (at {filename} line {line})" if line is not None else ""


def _identifier(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text)


def _pick_class(module: ModuleType, name: str, kind: Kind, where: str) -> type:
    """The class ``name`` of ``module``, or its one class of the kind defined there (not imported into it)."""
    base = base_class(kind)
    if name:
        cls = getattr(module, name, None)
        if not (isinstance(cls, type) and issubclass(cls, base)):
            found = _candidates(module, base)
            raise PluginError(f"{where}: no {kind} class {name!r} (a subclass of simcluster.sdk.{base.__name__}); "
                              f"it defines: {', '.join(found) or 'none'}")
        return cls
    found = _candidates(module, base)
    if len(found) == 1:
        return getattr(module, found[0])  # type: ignore[no-any-return]
    if not found:
        raise PluginError(f"{where}: defines no {kind} class (a subclass of simcluster.sdk.{base.__name__})")
    raise PluginError(f"{where}: defines {len(found)} {kind} classes ({', '.join(found)}); name one: "
                      f"{where}:{found[0]}")


def _candidates(module: ModuleType, base: type) -> list[str]:
    """Names of the concrete subclasses of ``base`` that ``module`` itself defines, in the file's order."""
    found = []
    for name, value in vars(module).items():
        if (isinstance(value, type) and issubclass(value, base) and value is not base
                and value.__module__ == module.__name__ and not inspect.isabstract(value)
                and not name.startswith("_")):
            found.append(name)
    return found


def _from_module(spec: str, kind: Kind) -> tuple[type, Origin]:
    module_name, _, name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise PluginError(f"{kind} {spec!r}: no module named {module_name!r} on the Python path") from None
        raise PluginError(f"{kind} {spec!r}: importing {module_name} raised {type(exc).__name__}: {exc}") from exc
    except Exception as exc:
        raise PluginError(f"{kind} {spec!r}: importing {module_name} raised {type(exc).__name__}: {exc}") from exc
    cls = _pick_class(module, name, kind, module_name)
    file = getattr(module, "__file__", None)
    digest = hashlib.sha256(Path(file).read_bytes()).hexdigest() if file and Path(file).is_file() else None
    return cls, Origin(spec, "module", file or module_name, digest)


def _from_entry_point(spec: str, kind: Kind) -> tuple[type, Origin]:
    points = installed(kind)
    if spec not in points:
        builtins = ", ".join(_registry(kind).names())
        plugins = f"; installed plug-ins: {', '.join(points)}" if points else ""
        raise PluginError(
            f"unknown {kind} {spec!r}; choose one of: {builtins}{plugins} — or give a file "
            f"(path/to/file.py[:Class]), package.module:Class, or the name of an installed plug-in (entry-point "
            f"group {GROUPS[kind]})")
    point = points[spec]
    try:
        cls = point.load()
    except Exception as exc:
        raise PluginError(f"{kind} {spec!r} (entry point {point.value}): loading it raised "
                          f"{type(exc).__name__}: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, base_class(kind))):
        raise PluginError(f"{kind} {spec!r}: entry point {point.value} is not a subclass of "
                          f"simcluster.sdk.{base_class(kind).__name__}")
    dist = point.dist
    where = f"{dist.name} {dist.version}" if dist is not None else point.value
    file = inspect.getsourcefile(cls)
    digest = hashlib.sha256(Path(file).read_bytes()).hexdigest() if file and Path(file).is_file() else None
    return cls, Origin(spec, "entry point", where, digest)


def _remember(cls: type, kind: Kind) -> Origin:
    """The origin of a class given directly, remembered so that its spec resolves to this very class."""
    if not issubclass(cls, base_class(kind)):
        raise PluginError(f"{cls.__qualname__} is not a {kind} (a subclass of simcluster.sdk."
                          f"{base_class(kind).__name__})")
    registry = _registry(kind)
    name = getattr(cls, "name", None)
    if isinstance(name, str) and name in registry and registry.get(name) is cls:
        return Origin(name, "built-in", cls.__module__)
    for (known_kind, _), (known, origin) in _CLASSES.items():
        if known is cls and known_kind == kind:
            return origin
    module = sys.modules.get(cls.__module__)
    file = getattr(module, "__file__", None)
    digest = hashlib.sha256(Path(file).read_bytes()).hexdigest() if file and Path(file).is_file() else None
    in_file = file is not None and getattr(module, cls.__qualname__, None) is cls  # (not one typed in a session)
    if cls.__module__ in ("__main__", "__mp_main__") or cls.__module__.startswith("simcluster_plugin_"):
        if in_file:
            spec = f"{Path(file).resolve()}:{cls.__qualname__}"  # type: ignore[arg-type]
            origin = Origin(spec, "class", str(Path(file).resolve()), digest)  # type: ignore[arg-type]
        else:  # known in this process only: a sweep's workers cannot load it (they say so)
            spec = f"{cls.__module__}:{cls.__qualname__}"
            origin = Origin(spec, "class", "defined interactively (this process only)")
    else:
        spec = f"{cls.__module__}:{cls.__qualname__}"
        origin = Origin(spec, "class", file or cls.__module__, digest)
    _CLASSES[(kind, spec)] = (cls, origin)
    return origin


def resolved_config(config: Any, base: Path | None = None) -> Any:
    """``config`` ready to run anywhere: its policy and placement specs loaded (a :class:`PluginError` if either
    names nothing), file specs made absolute (relative to ``base``, default the current directory), and the
    policy's own settings checked against its Settings and stored typed (a ConfigError names the setting)."""
    return resolve_plugins(config, base)[0]


def resolve_plugins(config: Any, base: Path | None = None
                    ) -> tuple[Any, tuple[type[Policy], Origin], tuple[type[Placement], Origin]]:
    """:func:`resolved_config`, and the policy's and the placement's (class, origin) it loaded: each spec is
    resolved here once (a file's content read and hashed once)."""
    from dataclasses import replace

    from simcluster.policies.base import policy_settings

    policy = absolute_spec(config.policy, "policy", base)
    placement = absolute_spec(config.placement, "placement", base)
    policy_class, policy_origin = resolve(policy, "policy")
    placement_class, placement_origin = resolve(placement, "placement")
    settings = policy_settings(policy_class, replace(config, policy=policy))
    typed = tuple((name, getattr(settings, name)) for name, _ in config.policy_settings)
    if (policy, placement, typed) != (config.policy, config.placement, config.policy_settings):
        config = replace(config, policy=policy, placement=placement, policy_settings=typed)
    return (config, (cast("type[Policy]", policy_class), policy_origin),
            (cast("type[Placement]", placement_class), placement_origin))
