"""Solvers of the BF-IO integer program (Eq. (IO), Section 4).

``solve(instance, solver)`` with ``solver`` one of

- ``fast`` (default): greedy placement plus local search in numba (:mod:`.fast`);
- ``highs``: exact, HiGHS on the aggregated formulation (:mod:`.highs`);
- ``gurobi``: exact, Gurobi on the same formulation (:mod:`.gurobi`).

The exact backends are warm-started from the fast solution, run under a time
limit and report the proven gap. ``on_error="fallback"`` moves to the next
backend (gurobi -> highs -> fast) when one fails; ``"fail"`` raises
:class:`SolverError` with a message naming the backend and how to switch.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bfio.ground.errors import ConfigError
from bfio.solvers.result import Solution, SolverError
from bfio.ground.jit import run_clock  # a clock without numba's compile (bfio.ground.jit)
from bfio.solvers.fast import fast_assign
from bfio.solvers.heap import heap_assign
from bfio.solvers.placement import resolve_placement

SOLVERS = ("fast", "highs", "gurobi")
#: The fast solver's placement algorithms (BF-IO option ``placement``, :mod:`.placement`):
#: ``greedy`` (:mod:`.fast`, greedy fill plus local search), ``heap`` (:mod:`.heap`,
#: largest-that-fits on a heap of pivots, for large clusters) and ``auto`` (the greedy
#: on few workers with free slots, the heap on many).
PLACEMENTS = ("greedy", "heap", "auto")
#: The placement :func:`solve` uses unless told: the greedy, the reference the others are
#: measured against (BF-IO's own default is ``bfio.policies.bfio_options.DEFAULT_PLACEMENT``).
GREEDY_PLACEMENT = "greedy"


def check_placement(value, key: str = "placement") -> str:
    if value not in PLACEMENTS:
        raise ConfigError(f"{key}: expected {' | '.join(PLACEMENTS)}, got {value!r}")
    return value

FALLBACK = {"gurobi": "highs", "highs": "fast"}
DEFAULT_TIME_LIMIT_S = 10.0


def trivial_bound(inst) -> float:
    """A lower bound on ``J``: the envelope cannot drop below the active loads'
    ``max_g base_g(h)``, and the admitted weighted volume ``sum_h delta^h W_j(h)``
    is at most that of the forced requests plus the largest others."""
    U = inst.admissible
    forced = inst.forced()
    w = inst.weights
    v = inst.profiles().astype(np.float64) @ w
    rest = np.sort(v[~forced])[::-1][: max(0, U - int(forced.sum()))]
    active = float(inst.base.sum(axis=0).astype(np.float64) @ w)
    return float(inst.lower_bound_envelope() - active - float(v[forced].sum()) - float(rest.sum()))


def solve_fast_instance(inst, max_rounds: int = 4, placement: str = GREEDY_PLACEMENT) -> Solution:
    """The fast solver on ``inst`` with ``placement`` (:data:`PLACEMENTS`); ``solver``
    of the result: ``fast`` (greedy) or ``fast-heap`` (``auto`` resolved on the instance)."""
    placement = resolve_placement(check_placement(placement), inst.free, inst.admissible, inst.step_s)
    t0 = run_clock()
    assign = fast_assign(inst, max_rounds=max_rounds) if placement == "greedy" else heap_assign(inst)
    bound = trivial_bound(inst)
    sol = Solution.make(inst, assign, solver="fast" if placement == "greedy" else f"fast-{placement}",
                        status="heuristic", proven_optimal=False, bound=bound, wall_s=0.0)
    if sol.objective <= bound + 1e-9 * max(1.0, abs(bound)):
        sol.proven_optimal, sol.status = True, "heuristic (meets lower bound)"
    sol.wall_s = run_clock() - t0
    return sol


def fast_warm_start(inst, placement: str = GREEDY_PLACEMENT) -> Solution:
    """The fast solver's solution of ``inst`` as an exact backend's warm start (and
    fallback). The kernels place by the terms of ``J`` they compute: with extra terms
    the exact backend holds (:mod:`bfio.solvers.terms`) the assignment is the
    imbalance's alone, scored with every term (never reported as proven optimal)."""
    if not inst.extra:
        return solve_fast_instance(inst, placement=placement)
    sol = solve_fast_instance(replace(inst, extra=()), placement=placement)
    return Solution.make(inst, sol.assign, solver=sol.solver, status="heuristic", proven_optimal=False,
                         bound=-np.inf, wall_s=sol.wall_s)


class SolverFallbackWarning(UserWarning):
    """Some routing calls of a run fell back from the requested exact solver."""


def fallback_message(count: int, calls: int, solver: str) -> str | None:
    """The warning text for ``count`` of ``calls`` routing calls that fell back
    from ``solver`` (``None`` when none did)."""
    if not count:
        return None
    share = f" ({100.0 * count / calls:.0f}%)" if calls else ""
    nxt = FALLBACK.get(solver, "fast")
    return (f"solver '{solver}' failed on {count} of {calls} routing calls{share}; those calls were solved by "
            f"the fallback ('{nxt}'{', then fast' if nxt != 'fast' else ''}), so the run is not purely "
            f"'{solver}'. See the 'solver_fallbacks' metric; use --solver {nxt} or fast to avoid the fallback.")


def warn_fallbacks(count: int, calls: int, solver: str, *, stream=None, use_warnings: bool = False) -> str | None:
    """Make solver fallbacks visible at the end of a run: when ``count > 0`` print
    ``bfio: warning: ...`` to ``stream`` (default ``sys.stderr``), or, with
    ``use_warnings``, issue a :class:`SolverFallbackWarning` instead (library
    callers that filter warnings). Returns the message (``None`` if no fallback),
    e.g. for a ``warnings`` list in the run's JSON."""
    import sys
    import warnings

    msg = fallback_message(int(count), int(calls), str(solver))
    if msg is None:
        return None
    if use_warnings:
        warnings.warn(msg, SolverFallbackWarning, stacklevel=2)
    else:
        print(f"bfio: warning: {msg}", file=sys.stderr if stream is None else stream, flush=True)
    return msg


def check_solver(name) -> str:
    if name not in SOLVERS:
        raise ConfigError(f"solver: expected {' | '.join(SOLVERS)}, got {name!r}")
    return name


def solve(inst, solver: str = "fast", *, time_limit_s: float | None = None, on_error: str = "fail",
          warm_start: Solution | None = None, threads: int = 1, placement: str = GREEDY_PLACEMENT) -> Solution:
    """Solve ``inst`` with ``solver``; see the module docstring. ``placement`` is the
    fast solver's (:data:`PLACEMENTS`), also the exact backends' warm start."""
    check_solver(solver)
    if on_error not in ("fail", "fallback"):
        raise ConfigError(f"on_solver_error: expected fail | fallback, got {on_error!r}")
    if solver != "fast":
        inst.terms.check_solver(solver)  # an exact backend expresses every term of J, or refuses by name
    if solver == "fast":
        return solve_fast_instance(inst, placement=placement)
    if inst.admissible == 0:  # nothing to choose: the one assignment, scored with every term
        return fast_warm_start(inst, placement)
    limit = DEFAULT_TIME_LIMIT_S if time_limit_s is None else float(time_limit_s)
    t0 = run_clock()
    start = warm_start
    try:
        # local: the exact backends build their model with scipy.sparse (bfio.solvers.model), a
        # startup cost that the fast solver and ``bfio --help`` never pay
        if solver == "highs":
            from bfio.solvers.highs import check_size
            from bfio.solvers.highs import solve_highs as backend

            check_size(inst)  # refuse a too-large model before spending time on a warm start
        else:
            from bfio.solvers.gurobi import solve_gurobi as backend
        if start is None:
            start = fast_warm_start(inst, placement)
        remaining = max(0.05, limit - (run_clock() - t0))
        sol = backend(inst, time_limit_s=remaining, warm_start=start.assign, threads=threads)
    except SolverError:
        if on_error == "fail":
            raise
        if start is None:
            start = fast_warm_start(inst)
        nxt = FALLBACK[solver]
        left = max(0.05, limit - (run_clock() - t0))  # the fallback shares the one time limit
        sol = start if nxt == "fast" else solve(inst, nxt, time_limit_s=left, on_error=on_error,
                                                warm_start=start, threads=threads)
        sol.fallback_from = solver
        return sol
    if start.objective < sol.objective:  # never worse than the warm start
        sol.assign, sol.objective = start.assign, start.objective
    sol.wall_s = run_clock() - t0
    return sol


__all__ = ["SOLVERS", "PLACEMENTS", "GREEDY_PLACEMENT", "check_placement", "DEFAULT_TIME_LIMIT_S", "Solution", "SolverError", "solve", "check_solver",
           "trivial_bound", "solve_fast_instance", "fast_warm_start", "SolverFallbackWarning", "fallback_message",
           "warn_fallbacks"]
