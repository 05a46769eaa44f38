"""The package's numba kernels: one decorator, one on-disk cache, compile time kept out of timings.

Every kernel of ``bfio`` is compiled with :func:`kernel` (``njit(cache=True)``)
or :func:`helper` (the same without numba's reference counting, ``_nrt=False``:
for helpers that take arrays but never allocate, see :mod:`bfio.solvers.fast`),
each with one specialization per argument types (integer constants passed by
other kernels do not make more: :func:`one_specialization_per_type`).
``cache=True`` keeps each compiled specialization in numba's on-disk cache, in a
directory named by a digest of the kernels' sources (:func:`bfio.ground.kernel_cache.kernel_cache_dir`:
numba re-checks a kernel's own file but not the files of the kernels it calls,
so an edit to a callee would otherwise leave its callers' stale machine code in
the cache), so a kernel is
compiled once per installation and later processes load it (about 1 s for all
of BF-IO's instead of a compile of tens of seconds). ``bfio compile``
(:mod:`bfio.pipeline.kernels_warmup`) fills the cache up front with the kernels of runs
with default options (``--all``: every kernel); an option's own kernels
otherwise compile on their first use.

Importing this module also installs two listeners on numba's compiler events:

- the first actual compile in a process (not a load from the cache) prints one
  line on stderr, ``bfio: compiling numba kernels ...``, so a first run's pause
  is explained;
- :func:`compile_seconds` counts the time this thread spent in numba's compiler
  (compiles and cache loads), and :func:`run_clock`, ``time.perf_counter()``
  less that, is a clock that stands still while numba compiles: the simulator's
  routing times and BF-IO's solver times are taken on it, so the first run in a
  fresh process reports the same ``route_s_*`` / ``solver_s_*`` as a warm one.
"""

from __future__ import annotations

import sys
import threading
import time

from numba import njit, types
from numba.core import config, event

from bfio.ground.kernel_cache import kernel_cache_dir

# Set before any kernel is decorated: numba's cache locator reads it when a kernel is made.
config.CACHE_DIR = kernel_cache_dir()

_KERNEL = njit(cache=True)
_HELPER = njit(cache=True, _nrt=False)


def _plain(t: types.Type) -> types.Type:
    """An integer literal type as its plain integer type (``Literal[int](-1)`` -> ``int64``)."""
    return types.unliteral(t) if isinstance(t, types.IntegerLiteral) else t


def one_specialization_per_type(dispatcher):
    """``dispatcher``, called from other kernels with integer constants typed as plain
    integers: numba would otherwise compile one more specialization of a kernel
    for each call site that passes a constant (``_prefer(..., -1, ...)`` beside
    ``_prefer(..., j, ...)``: the same machine code but for the constant, compiled
    twice; 11% of all compile time). The specialization for ``int64`` runs the same
    operations on the same values, so results do not change. Boolean constants
    stay literal (numba prunes the branches they decide)."""
    typed = dispatcher.get_call_template

    def get_call_template(args, kws):
        return typed(tuple(_plain(a) for a in args), {k: _plain(v) for k, v in kws.items()})

    dispatcher.get_call_template = get_call_template
    return dispatcher


def kernel(func):
    """Decorator of the package's kernels: compiled on first call, kept in numba's
    on-disk cache (``njit(cache=True)``), one specialization per argument types."""
    return one_specialization_per_type(_KERNEL(func))


def helper(func):
    """:func:`kernel` for kernels that take arrays but never allocate: compiled without
    numba's reference counting (``_nrt=False``), which their calls would otherwise pay."""
    return one_specialization_per_type(_HELPER(func))

#: What compiling costs on 2 cores (``benchmarks/bench_compile.py``): the kernels of
#: a run with default options (``bfio compile``) under a minute, an option's own
#: kernels seconds; quoted in the compile note.
COMPILE_ESTIMATE = "under a minute for a default run's kernels, seconds for an option's"
COMPILE_NOTE = (f"bfio: compiling numba kernels (once per installation, {COMPILE_ESTIMATE}; "
                "`bfio compile` compiles a default run's up front, `bfio compile --all` every one)...")


class _CompilerClock(event.Listener):
    """Seconds each thread spent holding numba's compiler lock (outermost holds only:
    the lock is re-entered while a kernel's callees compile)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _state(self) -> threading.local:
        st = self._local
        if not hasattr(st, "depth"):
            st.depth, st.since, st.total = 0, 0.0, 0.0
        return st

    def on_start(self, ev: event.Event) -> None:
        st = self._state()
        if st.depth == 0:
            st.since = time.perf_counter()
        st.depth += 1

    def on_end(self, ev: event.Event) -> None:
        st = self._state()
        st.depth -= 1
        if st.depth == 0:
            st.total += time.perf_counter() - st.since

    def seconds(self) -> float:
        """This thread's compiler time so far, including a compile under way."""
        st = self._state()
        running = time.perf_counter() - st.since if st.depth else 0.0
        return st.total + running


class _CompileNote(event.Listener):
    """Prints :data:`COMPILE_NOTE` on stderr at the process's first compile of a
    ``bfio`` kernel (not at a load from the cache, which sends no such event)."""

    def __init__(self) -> None:
        self.printed = False

    def on_start(self, ev: event.Event) -> None:
        if not self.printed and _is_ours(ev.data["dispatcher"]):
            self.printed = True
            print(COMPILE_NOTE, file=sys.stderr, flush=True)

    def on_end(self, ev: event.Event) -> None:
        pass


def _is_ours(dispatcher) -> bool:
    """Whether ``dispatcher`` is one of the package's kernels (not numba's own or another library's)."""
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
    return module == "bfio" or module.startswith("bfio.")


_CLOCK = _CompilerClock()
_NOTE = _CompileNote()
event.register("numba:compiler_lock", _CLOCK)
event.register("numba:compile", _NOTE)


def compile_seconds() -> float:
    """Seconds the calling thread has spent in numba's compiler (compiling kernels
    or loading them from the on-disk cache) since this module was imported."""
    return _CLOCK.seconds()


def run_clock() -> float:
    """``time.perf_counter()`` that stands still while numba compiles: differences
    of it time a kernel call without its first call's compile or cache load."""
    return time.perf_counter() - _CLOCK.seconds()


__all__ = ["kernel", "helper", "one_specialization_per_type", "COMPILE_ESTIMATE", "COMPILE_NOTE", "compile_seconds", "run_clock"]
