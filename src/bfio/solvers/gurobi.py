"""Exact backend: Gurobi (``gurobipy``) on the aggregated formulation of Eq. (IO).

The pip wheel ships a restricted license: models up to 2,000 variables and
2,000 constraints, valid until 2027-11-29. Beyond the limit (``GurobiError``
10010), without a license or after expiry, :func:`solve_gurobi` raises
:class:`~bfio.solvers.result.SolverError` with a message saying what happened
and how to switch backend; the caller fails or falls back as configured
(``on_solver_error``).

Optimality tolerance, as for HiGHS (:mod:`bfio.solvers.highs`): with
``delta = 1`` ``J`` is an integer, so ``MIPGap = 0`` and ``MIPGapAbs = 0.99``
make "proven optimal" exact; with ``delta < 1`` ``MIPGap = 1e-9`` (and Gurobi's
default ``MIPGapAbs = 1e-10``): no assignment has ``J`` lower by more than
``1e-9 |J|``, up to Gurobi's feasibility tolerance (1e-6 per row). The time
spent building the model counts against the time limit.
"""

from __future__ import annotations

import functools
import time

import numpy as np

from bfio.solvers.model import build_milp, model_size
from bfio.solvers.result import Solution, SolverError

RESTRICTED_LIMIT = 2000
ABS_GAP = 0.99  # delta = 1: J is integral
REL_GAP = 1e-9  # delta < 1
_HINT = "use --solver highs or fast, or --on-solver-error fallback"


def _env():
    import gurobipy as gp  # local: a missing gurobipy is a SolverError of solve_gurobi, not an ImportError here

    env = gp.Env(empty=True)
    env.setParam("OutputFlag", 0)
    env.start()
    return env


@functools.lru_cache(maxsize=1)
def size_limited() -> bool:
    """True when this Gurobi's licence limits a model to :data:`RESTRICTED_LIMIT`
    variables and constraints (the pip licence): probed once per process by
    optimizing an empty model one variable over the limit (milliseconds)."""
    import gurobipy as gp  # local: as in _env

    try:
        with _env() as env, gp.Model("bfio_probe", env=env) as model:
            model.addMVar(RESTRICTED_LIMIT + 1)
            model.optimize()
    except gp.GurobiError as e:
        return getattr(e, "errno", None) == 10010
    return False


def solve_gurobi(inst, time_limit_s: float | None = None, warm_start: np.ndarray | None = None,
                 threads: int = 1) -> Solution:
    try:
        import gurobipy as gp
        from gurobipy import GRB
    except ImportError as e:
        raise SolverError("gurobi", f"gurobipy is not importable ({e}); {_HINT}") from None
    t0 = time.perf_counter()
    nv, nr, _ = model_size(inst)  # before building: a model the licence refuses costs nothing
    if (nv > RESTRICTED_LIMIT or nr > RESTRICTED_LIMIT) and size_limited():
        raise SolverError("gurobi", f"model too large for the restricted pip license ({nv:,} variables, {nr:,} "
                                    f"constraints; limit {RESTRICTED_LIMIT} each); {_HINT}", code=10010)
    m = build_milp(inst, "gurobi")
    try:
        with _env() as env, gp.Model("bfio_io", env=env) as model:
            if inst.integral:
                model.Params.MIPGap = 0.0
                model.Params.MIPGapAbs = ABS_GAP  # J is integral
            else:
                model.Params.MIPGap = REL_GAP
            model.Params.Threads = int(threads)
            model.Params.Seed = 0
            if time_limit_s is not None:  # model build counted in the limit
                model.Params.TimeLimit = max(0.01, float(time_limit_s) - (time.perf_counter() - t0))
            vtype = np.where(m.integrality == 1, GRB.BINARY, GRB.CONTINUOUS)
            v = model.addMVar(m.num_vars, lb=m.lb, ub=m.ub, vtype=vtype)
            eq = m.row_lo == m.row_hi
            A = m.A.tocsr()
            if eq.any():
                model.addMConstr(A[eq], v, "=", m.row_lo[eq])
            ge = ~eq & np.isfinite(m.row_lo)
            le = ~eq & np.isfinite(m.row_hi)
            if ge.any():
                model.addMConstr(A[ge], v, ">", m.row_lo[ge])
            if le.any():
                model.addMConstr(A[le], v, "<", m.row_hi[le])
            model.setObjective(m.c @ v + m.offset, GRB.MINIMIZE)
            if warm_start is not None:
                v.Start = m.vector_from_assign(inst, warm_start)
            model.optimize()
            status_code = model.Status
            status = {GRB.OPTIMAL: "Optimal", GRB.TIME_LIMIT: "Time limit reached",
                      GRB.INFEASIBLE: "Infeasible"}.get(status_code, f"status {status_code}")
            if model.SolCount == 0:
                if warm_start is None:
                    raise SolverError("gurobi", f"no feasible solution found ({status})")
                assign = np.asarray(warm_start, dtype=np.int64)
            else:
                assign = m.assign_from_vector(np.asarray(v.X))
            bound = float(model.ObjBound)
    except gp.GurobiError as e:
        code = getattr(e, "errno", None)
        if code == 10010:
            what = (f"model too large for the restricted pip license ({m.num_vars} variables, {m.num_rows} "
                    f"constraints; limit {RESTRICTED_LIMIT} each)")
        elif code in (10009, 10032):
            what = f"no valid Gurobi license (error {code}: {e}); the pip license expires 2027-11-29"
        else:
            what = f"Gurobi error {code}: {e}"
        raise SolverError("gurobi", f"{what}; {_HINT}", code=code) from None
    return Solution.make(inst, assign, solver="gurobi", status=status,
                         proven_optimal=status_code == GRB.OPTIMAL, bound=bound,
                         wall_s=time.perf_counter() - t0)


def gurobi_available(inst=None) -> tuple[bool, str]:
    """``(True, "")`` if Gurobi can solve (a model of the size of) ``inst``; else the reason."""
    try:
        import gurobipy as gp  # noqa: F401
    except ImportError as e:
        return False, f"gurobipy not importable: {e}"
    try:
        with _env():
            pass
    except Exception as e:  # GurobiError: no license / expired
        return False, f"Gurobi license unavailable: {e}"
    if inst is not None:
        nv, nr, _ = model_size(inst)
        if nv > RESTRICTED_LIMIT or nr > RESTRICTED_LIMIT:
            return False, f"model exceeds the restricted license ({nv} vars, {nr} rows)"
    return True, ""
