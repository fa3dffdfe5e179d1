"""What policies and placements read: jobs, queues, nodes, pools, VCs and the cluster, as the engine keeps them.

A policy gets the engine's own objects, not copies: a pass then costs what it decides, never a copy of what
waits.  They are **read-only to a policy** — every change goes through the
:class:`~simcluster.policies.base.SchedulingContext` — and ``lucid-sim check-policy``
(:mod:`simcluster.testing`) catches a write at run time.  Iterating a queue or a VC's running jobs walks a
snapshot, so starting or preempting jobs meanwhile is safe.  The names below are the types to annotate with;
the fields a policy reads:

``JobView`` (:class:`~simcluster.job.Job`)
    ``index`` (trace order, the last tie-break of every order), ``job_id``, ``vc``, ``queue_vc`` (the partition
    whose queue it is in), ``user``, ``gpu_num``, ``gpu_milli``, ``submit_time``, ``duration`` (its work at
    speed 1: what an oracle knows), ``workload``, ``memory``, ``speeds``, ``state``, ``work_left``,
    ``overhead_left``, ``speed``, ``sharing``, ``start_time``, ``pending_since``, ``run_started_at``,
    ``busy_time``, ``queue_time``, ``preemptions``, ``restarts``, ``allocation`` ((node, GPU ids) while it runs);
    ``progress``, ``remaining_at(now)``, ``speed_on(gpu_type)``, ``time_left()``, ``finish_time()``.
``QueueView`` (:class:`~simcluster.queue.JobQueue`)
    ``first()``, ``first_entry()``, ``none_fits(gpus)``, ``runs_by_size(max_gpus)``, iteration, ``len``, ``in``.
``NodeView`` (:class:`~simcluster.cluster.Node`)
    ``name``, ``index``, ``gpu_count``, ``gpu_type``, ``gpu_memory``, ``up``, ``used``, ``shared``,
    ``free_ids``, ``jobs``, ``milli``, ``free_gpus``, ``gpus``, ``partners(job)``, ``memory_used(gpu)``.
``PoolView`` (:class:`~simcluster.cluster.Pool`)
    ``gpu_type``, ``nodes``, ``gpus_per_node``, ``total_gpus``, ``free_gpus``, ``buckets``,
    ``nodes_with_free(k)``.
``VCView`` (:class:`~simcluster.cluster.VirtualCluster`, a pool)
    ``name``, ``pending`` (a QueueView), ``running`` (its running jobs in start order), ``used_gpus``,
    ``shared_gpus``, ``gpu_types``, ``pools``, ``fastest_first``, ``to_arrive``, ``unplaceable`` (the fewest GPUs
    the placement found no room for since GPUs were last freed, 2**62 where none: ``try_start`` refuses a job of as
    many or more at once, changing nothing).
``ClusterView`` (:class:`~simcluster.cluster.Cluster`)
    ``vcs`` (every VC and the policy's own partitions, by name), ``total_gpus``, ``gpus_per_node``.
"""

from __future__ import annotations

import ast
import sys
from typing import Any, TypeAlias

from simcluster.cluster import Cluster, Node, Pool, RunningJobs, VirtualCluster
from simcluster.job import Job
from simcluster.queue import JobQueue

JobView: TypeAlias = Job
QueueView: TypeAlias = JobQueue
NodeView: TypeAlias = Node
PoolView: TypeAlias = Pool
VCView: TypeAlias = VirtualCluster
ClusterView: TypeAlias = Cluster

__all__ = ["ClusterView", "JobView", "NodeView", "PoolView", "QueueView", "VCView"]


# --- read-only at run time ------------------------------------------------------------------------
#
# A plug-in file is compiled with every attribute write whose target is not ``self`` or ``cls`` (``x.a = v``,
# ``x.a += v``, ``del x.a``, and the built-ins ``setattr``/``delattr``) routed through :func:`checked`, which
# refuses a view while a guarded run is on (:data:`GUARD`).  The engine's own writes stay plain attribute writes:
# the built-ins and the engine pay nothing, a plug-in pays one call per write of its own.

VIEW_TYPES: tuple[type, ...] = (Job, JobQueue, Node, Pool, Cluster, RunningJobs)  # (VirtualCluster is a Pool)
GUARD: Any = None  # the guard of the plug-in run in progress (simcluster.guard.RunGuard), else None
CHECK_NAME = "__simcluster_view_check__"  # how a rewritten file calls :func:`checked`


def checked(obj: Any, name: str = "") -> Any:
    """``obj``, unless it is a view and a plug-in run is on: then the guard's :class:`PluginFailed` naming the
    policy, hook, time, job and the line of the plug-in's file that wrote to it."""
    if GUARD is not None and isinstance(obj, VIEW_TYPES):
        GUARD.wrote_view(obj, name, sys._getframe(1))
    return obj


def checked_setattr(obj: Any, name: str, value: Any) -> None:
    setattr(checked(obj, name), name, value)


def checked_delattr(obj: Any, name: str) -> None:
    delattr(checked(obj, name), name)


class _RouteWrites(ast.NodeTransformer):
    """``X.a = v`` → ``check(X, 'a').a = v`` (X evaluated once, after v, as Python does), for X other than
    ``self``/``cls``; likewise augmented assignments and ``del``."""

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.ctx, (ast.Store, ast.Del)):
            return node
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            return node
        call = ast.Call(ast.Name(CHECK_NAME, ast.Load()), [node.value, ast.Constant(node.attr)], [])
        return ast.copy_location(ast.Attribute(ast.copy_location(call, node.value), node.attr, node.ctx), node)


def compile_plugin(source: bytes, filename: str) -> Any:
    """The code of a plug-in file, its attribute writes routed through :func:`checked` (line numbers kept, so
    tracebacks point at the file's own lines)."""
    tree = ast.parse(source, filename)
    tree = ast.fix_missing_locations(_RouteWrites().visit(tree))
    return compile(tree, filename, "exec", dont_inherit=True)


def plugin_globals() -> dict[str, Any]:
    """What a rewritten file's namespace needs before it runs: the check, and ``setattr``/``delattr`` checked."""
    return {CHECK_NAME: checked, "setattr": checked_setattr, "delattr": checked_delattr}



# --- the same check for code that was imported, not loaded from a file ---------------------------------------
#
# A policy given as ``module:Class``, by an installed entry point, or as a class in Python was imported the
# ordinary way, uncompiled by :func:`compile_plugin`.  :func:`route_writes` gives it the same check: each module
# that defines a class of its MRO (the plug-in's own code, not simcluster's) is compiled again from its source
# with the writes routed, and each of its functions takes the routed code of the same name and line in place —
# the module, its classes and functions stay the very objects the researcher imported; outside a guarded run
# the check lets every write through, as it does for a plug-in file.


def route_writes(cls: type) -> list[str]:
    """Check the writes of ``cls``'s own code (and of the other classes of its MRO defined outside simcluster)
    as a plug-in file's are checked; return the modules whose code could not be read (no source: a class typed
    into an interactive session, a compiled extension), whose writes stay unchecked."""
    unread = []
    for klass in cls.__mro__:
        name = klass.__module__
        if name == "simcluster" or name.startswith(("simcluster.", "simcluster_plugin_")):
            continue  # simcluster's own code, or a plug-in file already compiled with the check
        if name.partition(".")[0] in sys.stdlib_module_names:
            continue  # Python's own (builtins, abc.ABC, typing.Generic): never a policy's code
        module = sys.modules.get(name)
        if module is None:
            unread.append(name)
            continue
        if not _route_module(module, klass):
            unread.append(name)
    return unread


def _route_module(module: Any, klass: type) -> bool:
    """Give the functions of ``module`` (and ``klass``'s own, which a factory function may have made) their
    routed code; False when the module's source cannot be read."""
    import linecache

    namespace = vars(module)
    found = [*_functions(namespace.values(), module.__name__, set()), *_functions([klass], module.__name__, set())]
    functions = [f for f in found if getattr(f, "__module__", None) == module.__name__]
    if not functions:
        return True
    read = False
    for filename in dict.fromkeys(f.__code__.co_filename for f in functions):
        text = "".join(linecache.getlines(filename, namespace))
        if not text:
            continue  # (code made by exec: a dataclass's __init__, say)
        key = (filename, hash(text))
        routed = _ROUTED.get(key)
        if routed is None:
            try:
                routed = _code_index(compile_plugin(text.encode(), filename))
            except (SyntaxError, ValueError):
                continue
            _ROUTED[key] = routed
        read = True
        for function in functions:
            own = function.__code__
            new = routed.get((own.co_qualname, own.co_firstlineno)) if own.co_filename == filename else None
            if new is not None and new is not own and new.co_freevars == own.co_freevars:
                function.__code__ = new
    namespace.setdefault(CHECK_NAME, checked)
    for name, value in (("setattr", checked_setattr), ("delattr", checked_delattr)):
        namespace.setdefault(name, value)  # (a module that defines its own keeps it)
    return read


_ROUTED: dict[tuple[str, int], dict[tuple[str, int], Any]] = {}  # (file, its text's hash) → its routed code
# objects by (qualified name, first line)


def _code_index(code: Any) -> dict[tuple[str, int], Any]:
    """Every code object within ``code`` (a module's), by (qualified name, first line)."""
    found: dict[tuple[str, int], Any] = {}
    todo = [code]
    while todo:
        item = todo.pop()
        for const in item.co_consts:
            if isinstance(const, type(code)):
                found[(const.co_qualname, const.co_firstlineno)] = const
                todo.append(const)
    return found


def _functions(values: Any, module: str, seen: set[int]) -> Any:
    """The Python functions among ``values``: plain, in the classes of ``module`` (methods, static and class
    methods, properties, nested classes) and under decorators that keep ``__wrapped__``."""
    import types

    for value in values:
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, (staticmethod, classmethod)):
            yield from _functions([value.__func__], module, seen)
        elif isinstance(value, property):
            yield from _functions([value.fget, value.fset, value.fdel], module, seen)
        elif isinstance(value, types.FunctionType):
            yield value
            wrapped = getattr(value, "__wrapped__", None)
            if wrapped is not None:
                yield from _functions([wrapped], module, seen)
        elif isinstance(value, type) and getattr(value, "__module__", None) == module:
            yield from _functions(list(vars(value).values()), module, seen)
