"""What a BF-IO solver returns, and the error it raises."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bfio.ground.errors import PolicyError


class SolverError(PolicyError):
    """A backend could not solve an instance (missing, unlicensed, size limit,
    no feasible incumbent). The message says what happened and how to switch."""

    def __init__(self, solver: str, message: str, code=None):
        self.solver = solver
        self.code = code
        super().__init__(f"solver '{solver}': {message}")


@dataclass
class Solution:
    """A feasible assignment of Eq. (IO) and how good it is known to be.

    ``objective`` is ``J`` recomputed from ``assign`` by the instance (an exact
integer for ``delta = 1``, else a float); ``bound`` a proven
    lower bound on the optimum (``-inf`` if none); ``gap = (objective - bound) /
    max(objective, 1)``.
    """

    assign: np.ndarray
    objective: int | float
    proven_optimal: bool
    bound: float
    wall_s: float
    solver: str
    status: str = ""
    fallback_from: str | None = None

    @property
    def gap(self) -> float:
        if self.proven_optimal:
            return 0.0
        if not np.isfinite(self.bound):
            return float("inf")
        return max(0.0, (self.objective - self.bound) / max(abs(self.objective), 1))

    @classmethod
    def make(cls, inst, assign, *, solver, status, proven_optimal, bound, wall_s, fallback_from=None):
        """Check feasibility (never hand back an infeasible assignment) and score it."""
        assign = np.asarray(assign, dtype=np.int64)
        try:
            inst.check(assign)
        except ValueError as e:
            raise SolverError(solver, f"returned an infeasible assignment ({e})") from None
        obj = inst.objective(assign)
        if proven_optimal:
            bound = float(obj)
        return cls(assign=assign, objective=obj, proven_optimal=bool(proven_optimal), bound=float(bound),
                   wall_s=float(wall_s), solver=solver, status=status, fallback_from=fallback_from)

    def to_dict(self) -> dict:
        return {"solver": self.solver, "objective": self.objective if isinstance(self.objective, int) else float(self.objective), "assignment": self.assign.tolist(),
                "proven_optimal": self.proven_optimal, "bound": self.bound, "gap": self.gap,
                "status": self.status, "wall_s": self.wall_s, "fallback_from": self.fallback_from}
