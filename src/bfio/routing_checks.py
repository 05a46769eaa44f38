"""Checks of what a routing policy returns to the step loop (Section 3's
rules): every assignment respects the free slots (capacity ``B``) and names
existing workers, and instant dispatch binds every new request to a worker.
A violation raises :class:`~bfio.ground.errors.PolicyError` naming the policy and step.
"""

from __future__ import annotations

import numpy as np

from bfio.ground.errors import PolicyError
from bfio.engine.kernels import assignment_fault, first_outside


def check_assignment(assign: np.ndarray, n_pool: int, free: np.ndarray, name: str, step: int) -> None:
    """Refuse an assignment that breaks the capacity or stickiness rules."""
    G = free.shape[0]
    if assign.shape != (n_pool,):
        raise PolicyError(f"policy '{name}' at step {step}: returned shape {assign.shape}, "
                          f"expected one entry per pool request ({n_pool},)")
    if assign.dtype.kind not in "iu":
        raise PolicyError(f"policy '{name}' at step {step}: returned dtype {assign.dtype}, expected integers")
    fault, k = assignment_fault(assign, free)
    if fault == 1:
        raise PolicyError(f"policy '{name}' at step {step}: pool entry {k} assigned to worker {assign[k]}, "
                          f"outside 0..{G - 1} (or -1 to wait)")
    if fault == 2:
        counts = np.bincount(assign[assign >= 0], minlength=G)
        raise PolicyError(f"policy '{name}' at step {step}: worker {k} got {counts[k]} requests "
                          f"but has {free[k]} free slots (capacity B exceeded)")


def check_dispatch(to: np.ndarray, n: int, G: int, name: str, step: int) -> None:
    """Refuse a dispatch that does not bind every new request to an existing worker."""
    if to.shape != (n,):
        raise PolicyError(f"policy '{name}' at step {step}: dispatch returned shape {to.shape}, "
                          f"expected one worker per new request ({n},)")
    if to.dtype.kind not in "iu":
        raise PolicyError(f"policy '{name}' at step {step}: dispatch returned dtype {to.dtype}, expected integers")
    j = first_outside(to, G) if n else -1
    if j >= 0:
        raise PolicyError(f"policy '{name}' at step {step}: dispatch bound request {j} of the batch to worker "
                          f"{to[j]}, outside 0..{G - 1} (instant dispatch cannot defer a request)")
