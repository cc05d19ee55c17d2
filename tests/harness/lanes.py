"""The two test lanes, and how a test lands in one without anyone marking it by hand.

The rule: a test is ``external`` when it starts a child process of any kind — a tool (perfquery,
promtool, kubectl, ...), a server (ibsim, opensm, sshd, snmpsim, snmpd, Prometheus, Alertmanager,
chromium), the daemon, a Python subprocess — from its body, from a helper it calls, or from a fixture
it uses. Everything else is the fast lane, including tests against servers that run inside the pytest
process (asyncssh, aiohttp, socket threads): those are not processes.

How the marker is set, at collection (tests/conftest.py):
- the functions that create processes are listed here (``PROCESS_STARTERS``: subprocess.Popen/run/...,
  os.fork/system/posix_spawn, asyncio's create_subprocess_*, multiprocessing, the exporter's local
  transport) and so is anything decorated with ``@starts_processes`` (a fixture or a helper that starts
  processes in a way the code does not show, e.g. through a config that says ``transport: local``);
- a test is external when its function or any fixture it uses (pytest's closure of fixture names)
  refers to one of them, directly or through a function or class defined in tests/ or in the lab
  (fabric_exporter.lab), followed transitively;
- a backstop: a test left in the fast lane runs with process creation disabled, so a start the walk
  missed fails that test with a message naming the rule — it cannot silently slow the fast lane.
"""

from __future__ import annotations

import _posixsubprocess
import asyncio
import concurrent.futures
import functools
import importlib.util
import inspect
import multiprocessing
import os
import pty
import subprocess
import sys
import types
from typing import Any, Callable, Iterator

import pytest

from fabric_exporter.transport.local import LocalRunner

MARKER = "external"

# Code whose callees are walked: the tests' own helpers and the lab's servers. The exporter's core is
# not walked (the scheduler reaches the local transport only when a config asks for it).
WALKED_PACKAGES = ("tests", "fabric_exporter.lab")

PROCESS_STARTERS: set[int] = {id(f) for f in (
    subprocess.Popen, subprocess.run, subprocess.call, subprocess.check_call, subprocess.check_output,
    subprocess.getoutput, subprocess.getstatusoutput,
    os.fork, os.forkpty, os.system, os.popen, os.posix_spawn, os.posix_spawnp,
    os.spawnv, os.spawnve, os.spawnvp, os.spawnvpe, os.spawnl, os.spawnle, os.spawnlp, os.spawnlpe,
    pty.fork, pty.spawn,
    asyncio.create_subprocess_exec, asyncio.create_subprocess_shell,
    multiprocessing.Process, multiprocessing.Pool, concurrent.futures.ProcessPoolExecutor,
    LocalRunner,
)}
# Methods reached through an object the walk cannot resolve (``loop.subprocess_exec(...)``).
PROCESS_STARTING_ATTRIBUTES = frozenset({"subprocess_exec", "subprocess_shell",
                                         "create_subprocess_exec", "create_subprocess_shell"})

_KEEP_ALIVE: list[Any] = []  # registered objects stay alive, so their id() is never reused


def starts_processes(obj: Callable) -> Callable:
    """Declare a fixture or helper as starting processes: every test that uses it is ``external``."""
    for each in (obj, getattr(obj, "_get_wrapped_function", lambda: None)()):  # above or below @pytest.fixture
        if each is not None:
            PROCESS_STARTERS.add(id(each))
            _KEEP_ALIVE.append(each)
    return obj


def _is_starter(obj: Any) -> bool:
    return id(obj) in PROCESS_STARTERS or id(getattr(obj, "__wrapped__", None)) in PROCESS_STARTERS


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _walked(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return any(module == p or module.startswith(p + ".") for p in WALKED_PACKAGES)


def _functions_of(obj: Any) -> Iterator[types.FunctionType]:
    """The Python functions behind a function, a method, a property or a class (its methods and bases')."""
    obj = inspect.unwrap(obj) if callable(obj) else obj
    if isinstance(obj, types.FunctionType):
        yield obj
    elif isinstance(obj, types.MethodType):
        yield from _functions_of(obj.__func__)
    elif isinstance(obj, type):
        for klass in obj.__mro__:
            if not _walked(klass):
                continue
            for member in vars(klass).values():
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if isinstance(member, property):
                    yield from (f for f in (member.fget, member.fset) if isinstance(f, types.FunctionType))
                elif isinstance(member, types.FunctionType):
                    yield member


class ProcessFinder:
    """Answers "does this function start a process?", remembering each function it has walked."""

    def __init__(self) -> None:
        self._seen: dict[int, str | None] = {}

    def why(self, obj: Any) -> str | None:
        """How ``obj`` starts a process ("SSHD.start -> subprocess.Popen"), or None if it does not."""
        if _is_starter(obj):
            return _name(obj)
        for func in _functions_of(obj):
            found = self._walk(func)
            if found:
                return found
        return None

    def _walk(self, func: types.FunctionType) -> str | None:
        key = id(func.__code__)
        if key in self._seen:
            return self._seen[key]
        self._seen[key] = None  # a cycle reads as "no" until the walk finishes
        found = self._find(func)
        self._seen[key] = found
        _KEEP_ALIVE.append(func)
        return found

    def _find(self, func: types.FunctionType) -> str | None:
        names: set[str] = set()
        for code in _code_objects(func.__code__):
            names.update(code.co_names)
        if PROCESS_STARTING_ATTRIBUTES & names:
            return f"{func.__qualname__} -> .{min(PROCESS_STARTING_ATTRIBUTES & names)}()"
        # a global, or a module the function imports itself (``import subprocess`` in its body)
        referenced = [func.__globals__[n] if n in func.__globals__ else sys.modules[n]
                      for n in names if n in func.__globals__ or n in sys.modules]
        referenced += [cell.cell_contents for cell in func.__closure__ or () if _has_contents(cell)]
        for obj in _through_modules(referenced, names):
            if obj is func or not (_is_starter(obj) or _walked(obj)):
                continue
            found = self.why(obj)
            if found:
                return f"{func.__qualname__} -> {found}"
        return None


def _through_modules(objects: list[Any], names: set[str]) -> Iterator[Any]:
    """The objects, with each module replaced by its attributes this code names (``subprocess.run``,
    ``tests.harness.sshd.SSHD``)."""
    modules_seen: set[int] = set()
    stack = list(objects)
    while stack:
        obj = stack.pop()
        if not isinstance(obj, types.ModuleType):
            yield obj
        elif id(obj) not in modules_seen:
            modules_seen.add(id(obj))
            stack.extend(m for m in (getattr(obj, n, None) for n in names) if m is not None)


def _has_contents(cell: types.CellType) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _name(obj: Any) -> str:
    module = getattr(obj, "__module__", "") or ""
    return f"{module}.{getattr(obj, '__qualname__', repr(obj))}".lstrip(".")


def classify(item: pytest.Item, finder: ProcessFinder) -> str | None:
    """Why ``item`` is external (its function or one of its fixtures starts a process), else None."""
    function = getattr(item, "function", None)
    if function is not None:
        found = finder.why(function)
        if found:
            return found
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        for fixturedef in (info.name2fixturedefs.get(name, ()) if info else ()):
            found = finder.why(fixturedef.func)
            if found:
                return f"fixture {name}: {found}"
    return None


class ProcessStartForbidden(RuntimeError):
    pass


class ProcessGuard:
    """While ``allowed`` is False, every way CPython creates a process raises: subprocess (and so asyncio's
    subprocesses) forks through its own reference to _posixsubprocess.fork_exec or os.posix_spawn,
    multiprocessing through os.fork or _posixsubprocess.fork_exec. Installed once per session;
    tests/conftest.py sets ``allowed`` per test."""

    def __init__(self) -> None:
        self.allowed = True
        self.test = ""

    def install(self) -> None:
        self._wrap(_posixsubprocess, "fork_exec")
        self._wrap(subprocess, "_fork_exec")
        for name in ("fork", "forkpty", "system", "posix_spawn", "posix_spawnp"):
            self._wrap(os, name)

    def _wrap(self, module: types.ModuleType, name: str) -> None:
        original = getattr(module, name)

        @functools.wraps(original)
        def guarded(*args, **kwargs):
            if not self.allowed:
                raise ProcessStartForbidden(
                    f"{self.test} starts an external process ({module.__name__}.{name} {args[:1]!r}) but is "
                    "in the fast lane: start it through a fixture or helper decorated with @starts_processes "
                    "(tests/harness/lanes.py) so the test is marked 'external'")
            return original(*args, **kwargs)

        setattr(module, name, guarded)


def build_library_caches() -> None:
    """Build, before the tests and outside any of them, what a library fills on first use by starting a
    helper: matplotlib's font list (it runs fc-list), written to $MPLCONFIGDIR, and asyncssh's UMAC
    binding (its import runs `ldconfig -p` through ctypes.util.find_library). A library's one-time
    side effect is not the process of whichever test happened to import it first (alone, or on an
    xdist worker, that test would fail the guard; after another test it would pass)."""
    if importlib.util.find_spec("matplotlib") is not None:
        import matplotlib.font_manager  # noqa: F401
    import asyncssh  # noqa: F401
    # Hypothesis imports its shrinker's optimiser lazily, deep inside a failing or targeted run; pytest
    # rewrites plugin modules on import, and CPython 3.11.7's ast.parse can fail that close to the
    # recursion limit ("SystemError: AST constructor recursion depth mismatch"). Imported here, at
    # the bottom of the stack, it is parsed once, safely.
    if importlib.util.find_spec("hypothesis") is not None:
        import hypothesis.internal.conjecture.optimiser  # noqa: F401
