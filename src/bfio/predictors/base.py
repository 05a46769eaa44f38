"""The base of every predictor and the conventions they share (``bfio.predictors``).

A point predictor returns, once per workload, an estimate ``o_hat_i`` of each
request's decode length; the remaining steps at a routing call are
``r_i = max(1, o_hat_i - tau_i)`` (``../shared/spec/semantics.md``, "BF-IO").
"""

from __future__ import annotations

import numpy as np

#: How the lookahead reads an erring point estimate (option ``remaining``):
#: ``posterior`` (:class:`~bfio.predictors.posterior.PosteriorPredictor`: the learned error distribution
#: and the tokens generated so far) or ``paper`` (``r_i = max(1, o_hat_i - tau_i)``,
#: the paper's convention).
REMAINING = ("posterior", "paper")


def default_remaining(solver: str) -> str:
    """BF-IO's option ``remaining`` when not given: the noise-aware ``posterior``
    reading where the solver takes expected (fractional) loads (``fast``), else ``paper``."""
    return "posterior" if solver == "fast" else "paper"


# "Never finishes within any window": larger than every horizon we accept.
NEVER = np.int64(2**40)


class Predictor:
    """Base class of the point predictors: :meth:`decode_estimate` returns ``o_hat``
    for every request (``probabilistic = False``)."""

    name = "predictor"
    probabilistic = False

    def reset(self) -> None:
        """Forget what was learnt (called before every simulation)."""

    def stats(self) -> dict:
        return {}

    def decode_estimate(self, decode: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> dict:
        return {"predictor": self.name}


__all__ = ["REMAINING", "default_remaining", "NEVER", "Predictor"]
