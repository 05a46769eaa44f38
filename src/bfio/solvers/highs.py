"""Exact backend: HiGHS (``highspy``) on the aggregated formulation of Eq. (IO).

Optimality tolerance. With ``delta = 1`` (``inst.integral``) ``J`` is an integer
for every assignment, so the relative gap is set to 0 and the absolute gap to
:data:`ABS_GAP` < 1: "proven optimal" then means exactly optimal. With
``delta < 1`` ``J`` is a real number and "proven optimal" means HiGHS proved
that no feasible assignment has ``J`` lower by more than :data:`REL_GAP` times
``|J|`` (or :data:`FLOAT_ABS_GAP`), up to its feasibility tolerance (1e-6 per
envelope row, i.e. at most ``1e-6 G sum_h delta^h`` on ``J``).

Output. HiGHS writes nothing to stdout: ``output_flag`` is off, and the
"Running HiGHS ..." banner that ``highspy.Highs()`` prints while it is being
constructed (before any option can be set) is sent to the null device, so
``bfio solve`` and ``bfio simulate --json -`` print valid JSON.

Time limit. HiGHS checks its time limit only between phases and simplex
iterations, so on large models single phases overrun it (measured with
``benchmarks/bench_highs_time_limit.py``: on a G = 58, H = 40 call with 1,024
waiting and lifetimes, 59k binaries, the root LP ran 151 s under a 5 s limit;
at G = 256, 262k binaries, feasibility jump ran 11 s before the first check).
Therefore:

- the time spent building the model (and the fast warm start) counts against the limit;
- feasibility jump is off (the fast solver's warm start is always given);
- models with more than :data:`GUARD_BINARIES` binaries run in a forked
  process that is killed :data:`GRACE_S` after the limit (the incumbent is then
  the warm start); measured: 20 s limit -> 21.2-21.3 s at G = 256, H = 40;
- models with more than :data:`MAX_BINARIES` binaries (waiting requests times
  workers with free slots) are refused with a :class:`SolverError` before
  anything is built: HiGHS does not finish their root LP within usual limits
  (no useful bound) and needs 0.5 GB or more. Use the ``fast`` solver, or
  ``on_solver_error = fallback``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

import numpy as np

from bfio.solvers.model import build_milp, model_size
from bfio.solvers.result import Solution, SolverError

ABS_GAP = 0.99  # delta = 1: J is integral, a gap below 1 proves optimality
REL_GAP = 1e-9  # delta < 1: J is real
FLOAT_ABS_GAP = 1e-9
MAX_BINARIES = 60_000
GUARD_BINARIES = 5_000  # above this, HiGHS runs in a forked process stopped at the limit
GRACE_S = 1.0  # how long after the limit the guard waits for HiGHS's own stop
_HINT = "use --solver fast (or --on-solver-error fallback)"


@contextlib.contextmanager
def _stdout_to_devnull():
    """Send file descriptor 1 to the null device (C-level writes included; this is
    fd 1 itself, whatever object ``sys.stdout`` currently is)."""
    fd = 1
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    saved = os.dup(fd)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), fd)
            try:
                yield
            finally:
                with contextlib.suppress(Exception):
                    import ctypes

                    ctypes.CDLL(None).fflush(None)  # push C-buffered output to the null device
                os.dup2(saved, fd)
    finally:
        os.close(saved)


def quiet_highs():
    """A ``highspy.Highs`` that writes nothing to stdout (see the module docstring)."""
    import highspy  # local: a missing highspy is a SolverError of solve_highs, not an ImportError of this module

    with _stdout_to_devnull():
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
    return h


def check_size(inst, max_binaries: int | None = None) -> None:
    """Raise :class:`SolverError` if the model of ``inst`` exceeds ``max_binaries``
    (default :data:`MAX_BINARIES`, read at call time)."""
    max_binaries = MAX_BINARIES if max_binaries is None else int(max_binaries)
    nv, nr, nb = model_size(inst)
    if nb > max_binaries:
        nT = int((inst.free > 0).sum())
        raise SolverError("highs", f"model too large ({nb:,} binaries = {inst.waiting:,} waiting x {nT:,} workers "
                          f"with free slots; {nv:,} variables, {nr:,} rows; limit {max_binaries:,} binaries, "
                          f"beyond which HiGHS does not reach a useful bound within a routing call's time "
                          f"limit); {_HINT}")


def _run_highs(inst, m, time_limit_s: float | None, warm_vec: np.ndarray | None, threads: int) -> dict:
    """Run HiGHS on the built model ``m``; a picklable dict of what came out."""
    import highspy  # local: as in quiet_highs

    h = quiet_highs()
    if inst.integral:
        h.setOptionValue("mip_rel_gap", 0.0)
        h.setOptionValue("mip_abs_gap", ABS_GAP)
    else:
        h.setOptionValue("mip_rel_gap", REL_GAP)
        h.setOptionValue("mip_abs_gap", FLOAT_ABS_GAP)
    h.setOptionValue("threads", int(threads))
    h.setOptionValue("random_seed", 0)
    h.setOptionValue("presolve", "off")  # HiGHS presolve takes seconds on these small knapsack-like models
    h.setOptionValue("mip_heuristic_run_feasibility_jump", False)  # ignores the time limit on large models
    if time_limit_s is not None:
        h.setOptionValue("time_limit", float(time_limit_s))
    lp = highspy.HighsLp()
    lp.num_col_ = m.num_vars
    lp.num_row_ = m.num_rows
    lp.col_cost_ = m.c
    lp.col_lower_ = m.lb
    lp.col_upper_ = np.where(np.isinf(m.ub), highspy.kHighsInf, m.ub)
    lp.row_lower_ = np.where(np.isinf(m.row_lo), -highspy.kHighsInf, m.row_lo)
    lp.row_upper_ = np.where(np.isinf(m.row_hi), highspy.kHighsInf, m.row_hi)
    lp.offset_ = m.offset
    csc = m.A.tocsc()
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = csc.indptr
    lp.a_matrix_.index_ = csc.indices
    lp.a_matrix_.value_ = csc.data
    lp.integrality_ = [highspy.HighsVarType.kInteger if v else highspy.HighsVarType.kContinuous
                       for v in m.integrality]
    h.passModel(lp)
    if warm_vec is not None:
        sol = highspy.HighsSolution()
        sol.col_value = list(warm_vec)
        sol.value_valid = True
        h.setSolution(sol)
    h.run()
    info = h.getInfo()
    feasible = info.primal_solution_status >= 2
    return {"status": h.modelStatusToString(h.getModelStatus()), "feasible": feasible,
            "x": np.asarray(h.getSolution().col_value)[m.x_slice()] if feasible else None,
            "bound": float(info.mip_dual_bound)}


def _child(conn, inst, m, time_limit_s, warm_vec, threads):  # pragma: no cover - runs in the forked child
    try:
        conn.send(_run_highs(inst, m, time_limit_s, warm_vec, threads))
    except BaseException as e:
        conn.send({"error": f"{type(e).__name__}: {e}"})
    finally:
        conn.close()


def _run_highs_guarded(inst, m, time_limit_s: float, warm_vec, threads: int) -> dict:
    """:func:`_run_highs` in a forked child that is killed :data:`GRACE_S` after
    the time limit: HiGHS does not check its limit in every phase (e.g. the root
    LP of a large model), so the limit is enforced from outside."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, inst, m, time_limit_s, warm_vec, threads), daemon=True)
    proc.start()
    send.close()
    try:
        if recv.poll(time_limit_s + GRACE_S):
            try:
                out = recv.recv()
            except EOFError:
                out = {"error": f"HiGHS process ended without a result (exit code {proc.exitcode})"}
        else:
            out = {"status": "Time limit reached (stopped by the deadline guard)", "feasible": False,
                   "x": None, "bound": -np.inf}
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        recv.close()
    if "error" in out:
        raise SolverError("highs", f"{out['error']}; {_HINT}")
    return out


def solve_highs(inst, time_limit_s: float | None = None, warm_start: np.ndarray | None = None,
                threads: int = 1, max_binaries: int | None = None) -> Solution:
    """Solve ``inst`` with HiGHS within ``time_limit_s`` (model build included).

    Models with more than :data:`GUARD_BINARIES` binaries run in a forked
    process that is stopped at the limit (plus :data:`GRACE_S`), so the limit
    holds even where HiGHS does not check it."""
    try:
        import highspy  # noqa: F401
    except ImportError as e:  # pragma: no cover - highspy is a dependency
        raise SolverError("highs", f"highspy is not importable ({e}); install highspy or {_HINT}") from None
    t0 = time.perf_counter()
    check_size(inst, max_binaries)
    m = build_milp(inst, "highs")
    remaining = None
    if time_limit_s is not None:
        remaining = float(time_limit_s) - (time.perf_counter() - t0)
        if remaining <= 0 and warm_start is not None:  # the build used up the limit: keep the warm start
            return Solution.make(inst, warm_start, solver="highs", status="Time limit reached (model build)",
                                 proven_optimal=False, bound=-np.inf, wall_s=time.perf_counter() - t0)
        remaining = max(remaining, 0.01)
    warm_vec = None if warm_start is None else m.vector_from_assign(inst, warm_start)
    guarded = (remaining is not None and m.n * m.touched.size > GUARD_BINARIES
               and "fork" in __import__("multiprocessing").get_all_start_methods())
    out = (_run_highs_guarded if guarded else _run_highs)(inst, m, remaining, warm_vec, threads)
    status = out["status"]
    if not out["feasible"]:  # no feasible incumbent
        if warm_start is None:
            raise SolverError("highs", f"no feasible solution found (status: {status}); {_HINT}")
        assign = np.asarray(warm_start, dtype=np.int64)
    else:
        v = np.zeros(m.num_vars)
        v[m.x_slice()] = out["x"]
        assign = m.assign_from_vector(v)
    return Solution.make(inst, assign, solver="highs", status=status, proven_optimal=status == "Optimal",
                         bound=out["bound"], wall_s=time.perf_counter() - t0)
