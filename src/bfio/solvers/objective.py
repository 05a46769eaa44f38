"""The BF-IO objective, written once (``../shared/spec/semantics.md``, "BF-IO").

At a routing call the integer program (IO) of Section 4 chooses which waiting
requests to admit and where, to minimize the discounted accumulated predicted
imbalance over the lookahead window ``h = 0..H``:

    J = sum_{h=0..H} delta^h [ G max_g Lhat_g(h) - sum_g Lhat_g(h) ]

where ``Lhat_g(h)`` is the predicted load of worker ``g`` at offset ``h``: the
already-active requests' predicted loads plus, for every request ``j`` admitted
to ``g``, ``s_j + h`` while ``h < l_j`` (its lifetime in offsets; ``l_j = H + 1``
means it persists over the whole window).

Two named objectives (:data:`OBJECTIVES`):

- ``default``: the project's choice from the objective study
  (``docs/bfio.md``, "Objective study"): discount :data:`DEFAULT_DISCOUNT` and,
  with a point predictor, new requests that finish at their predicted decode
  length (``new_requests = predicted``);
- ``paper-literal``: Eq. (IO) exactly as printed, ``delta = 1`` and new
  requests that persist over the window.

Everything that evaluates ``J`` (the instance, brute force, the reports) calls
:func:`imbalance_objective`; the fast solver and the MILP backends take their
weights from :func:`offset_weights` and their per-request contributions from
:func:`request_profiles`.

The terms of one routing call, computed once (issue 28)
--------------------------------------------------------

:class:`ObjectiveTerms` holds, for one routing call of Eq. (IO), everything
the backends need about ``J`` besides the loads and the constraints: the
window ``H``, the offsets a backend solves (``window``: the fast path's
:func:`effective_horizon`, or all ``H + 1`` for the exact backends), the
discount ``delta`` and the weights ``delta^h`` over that window, and the
new requests' lifetimes ``l_j`` (``None``: they persist). It is built once per
policy (:meth:`ObjectiveTerms.build`: ``H``, ``delta``, the ``new_requests``
model) and bound to a call's waiting requests by :meth:`ObjectiveTerms.for_call`
(their decode estimates ``o_hat_j``). Its consumers:

- the fast path, :func:`bfio.solvers.fast.solve_fast_terms`,
  :func:`bfio.solvers.heap.solve_heap_terms` and
  :func:`bfio.solvers.shards.solve_sharded_terms`: the numba kernels receive
  the terms' arrays from :meth:`ObjectiveTerms.kernel_arrays` (lifetimes and
  weights, the one place where the object becomes kernel arguments);
- the exact backends, through the instance: :func:`bfio.solvers.instance.instance_of_call`
  builds the :class:`~bfio.solvers.instance.Instance` of a call from the terms,
  and :attr:`Instance.terms <bfio.solvers.instance.Instance.terms>` gives them
  back over all ``H + 1`` offsets, from which the instance's weights, profiles
  and ``J`` and the MILP's coefficients (:func:`bfio.solvers.model.build_milp`)
  are taken.

How to add a term
~~~~~~~~~~~~~~~~~

A new term of ``J`` goes in two places:

1. here: its data as a field of :class:`ObjectiveTerms`, computed in
   :meth:`~ObjectiveTerms.build` (per policy) or :meth:`~ObjectiveTerms.for_call`
   (per call); its value in the reference evaluation
   :meth:`ObjectiveTerms.evaluate` (``J`` of predicted loads: the instance's
   :meth:`~bfio.solvers.instance.Instance.objective`, hence every backend's
   reported ``J`` and the tests that check the backends against it); a part
   that is linear in the admitted requests in :meth:`ObjectiveTerms.request_values`
   (the MILP's coefficients); and the arrays the kernels need in
   :meth:`ObjectiveTerms.kernel_arrays` (the fast path's one hand-over);
2. the numba kernel's cost function: :func:`bfio.solvers.fast._life_cost`
   (with ``_volume``; ``_pivots`` and the heap's ``_key`` are its minimizers
   and follow it), which receives the new array through the kernels'
   arguments from :meth:`~ObjectiveTerms.kernel_arrays`.

A term that is not linear in the admitted requests (another envelope, say)
also needs its rows in the aggregated MILP (:mod:`bfio.solvers.model`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bfio.errors import ConfigError

# Chosen by the objective study (docs/bfio.md, "Objective study"; bfio.studies.objective_study).
DEFAULT_DISCOUNT = 0.6
#: ``delta = 1``: every offset weighs the same, Eq. (IO) as printed. The discount of
#: the ``paper-literal`` objective and the default of the solver layer (an
#: :class:`~bfio.solvers.instance.Instance`, an instance file written before the
#: discount existed, :meth:`ObjectiveTerms.build`, :func:`offset_weights`); a
#: BF-IO policy's default is its objective's (:data:`OBJECTIVES`).
UNDISCOUNTED = 1.0
NEW_REQUEST_MODELS = ("predicted", "persist")
OBJECTIVES = {
    "default": {"discount": DEFAULT_DISCOUNT, "new_requests": "predicted"},
    "paper-literal": {"discount": UNDISCOUNTED, "new_requests": "persist"},
}


def check_discount(value, key: str = "discount") -> float:
    """``0 < delta <= 1`` or a :class:`ConfigError` naming ``key``."""
    if (isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer))
            or not math.isfinite(float(value)) or not 0.0 < float(value) <= 1.0):
        raise ConfigError(f"{key}: expected a number in (0, 1], got {value!r}")
    return float(value)


def check_new_requests(value, key: str = "new_requests") -> str:
    if value not in NEW_REQUEST_MODELS:
        raise ConfigError(f"{key}: expected {' | '.join(NEW_REQUEST_MODELS)}, got {value!r}")
    return value


def check_objective(value, key: str = "objective") -> str:
    if value not in OBJECTIVES:
        raise ConfigError(f"{key}: expected {' | '.join(OBJECTIVES)}, got {value!r}")
    return value


def offset_weights(horizon: int, discount: float = UNDISCOUNTED) -> np.ndarray:
    """``w_h = delta^h`` for ``h = 0..H`` (float64; exactly ones for ``delta = 1``)."""
    h = np.arange(int(horizon) + 1, dtype=np.float64)
    if discount == 1.0:
        return np.ones_like(h)
    return np.power(float(discount), h)


#: The fast solver ignores offsets whose weight delta^h is below this (their share
#: of the total weight is below ``NEGLIGIBLE_WEIGHT * delta / (1 - delta)``).
NEGLIGIBLE_WEIGHT = 1e-3


def effective_horizon(horizon: int, discount: float, negligible: float = NEGLIGIBLE_WEIGHT) -> int:
    """The largest ``h <= H`` with ``delta^h >= negligible`` (``H`` for ``delta = 1``).

    The fast solver optimizes ``J`` over offsets ``0..effective_horizon`` only:
    beyond it every weight is below ``negligible`` (relative to offset 0), so
    those offsets cannot change ``J`` by more than that share, but they would
    steer the heuristic's candidate choice and local search, whose work grows
    with the window. This makes the result independent of ``H`` once ``H``
    passes the discount's reach (the plateau over ``H``), and keeps long windows
    cheap. The exact backends always solve the full window.
    """
    H = int(horizon)
    if discount >= 1.0:
        return H
    reach = int(math.floor(math.log(negligible) / math.log(float(discount))))
    return min(H, max(0, reach))


def request_profiles(sizes: np.ndarray, lifetimes: np.ndarray | None, horizon: int) -> np.ndarray:
    """``(n, H + 1)`` int64: what each new request adds at offset ``h`` if admitted,
    ``s_j + h`` while ``h < l_j`` (``lifetimes=None``: every request persists)."""
    h = np.arange(int(horizon) + 1, dtype=np.int64)
    W = np.asarray(sizes, dtype=np.int64)[:, None] + h[None, :]
    if lifetimes is not None:
        W = np.where(h[None, :] < np.asarray(lifetimes, dtype=np.int64)[:, None], W, 0)
    return W


def imbalance_objective(loads: np.ndarray, weights: np.ndarray):
    """``J = sum_h w_h [G max_g L_g(h) - sum_g L_g(h)]`` for loads ``(..., G, H + 1)``.

    With unit weights and integer loads the result is an exact Python ``int``
    (or an int64 array for stacked loads); otherwise float64.
    """
    L = np.asarray(loads)
    G = L.shape[-2]
    per_offset = G * L.max(axis=-2) - L.sum(axis=-2)  # (..., H + 1)
    w = np.asarray(weights, dtype=np.float64)
    if L.dtype.kind in "iu" and np.all(w == 1.0):
        out = per_offset.astype(np.int64).sum(axis=-1)
        return int(out) if np.ndim(out) == 0 else out
    out = per_offset.astype(np.float64) @ w
    return float(out) if np.ndim(out) == 0 else out


#: Lifetime of a new request that persists over the whole window (``new_requests = persist``):
#: beyond every window, so ``h < l_j`` holds at every offset (the kernels clip it to ``H + 1``).
PERSIST = np.int64(2**40)


def persisting(n: int) -> np.ndarray:
    """Lifetimes of ``n`` new requests that persist over any window (``new_requests = persist``)."""
    return np.full(n, PERSIST, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class ObjectiveTerms:
    """The terms of Eq. (IO)'s objective ``J`` at one routing call (Section 4),
    computed once and consumed by every backend (module docstring, "The terms
    of one routing call").

    - ``horizon``: ``H``, the lookahead window ``0..H`` of Eq. (IO) (the
      instance of the call, and the exact backends, hold all ``H + 1`` offsets);
    - ``window``: the last offset solved by this object's consumer:
      ``effective_horizon(H, delta)`` for the fast path (``build(..., fast=True)``,
      offsets of negligible weight left out) or ``H`` (:meth:`full`);
    - ``discount``: ``delta`` in ``(0, 1]``;
    - ``new_requests``: ``predicted`` | ``persist`` (:data:`NEW_REQUEST_MODELS`);
    - ``weights``: ``w_h = delta^h`` for ``h = 0..window`` (:func:`offset_weights`);
    - ``lifetimes``: ``l_j`` of the call's waiting requests (oldest first; a new
      request adds ``s_j + h`` while ``h < l_j``), ``None`` when they persist
      over the window (and, with ``predicted``, before :meth:`for_call` binds
      the terms to a call).
    """

    horizon: int
    window: int
    discount: float
    new_requests: str
    weights: np.ndarray
    lifetimes: np.ndarray | None = None

    @classmethod
    def build(cls, horizon: int, discount: float = UNDISCOUNTED, new_requests: str = "persist", decode_estimate=None,
              waiting=None, *, fast: bool = False) -> ObjectiveTerms:
        """The terms of Eq. (IO) for window ``H = horizon``, discount ``delta`` and
        the ``new_requests`` model (validated: :class:`ConfigError` naming the
        option), over offsets ``0..effective_horizon(H, delta)`` with ``fast``
        (the fast path) else ``0..H``. With ``decode_estimate`` they are bound to
        a call at once (:meth:`for_call`)."""
        discount = check_discount(discount)
        H = int(horizon)
        window = effective_horizon(H, discount) if fast else H
        terms = cls(H, window, discount, check_new_requests(new_requests), offset_weights(window, discount))
        return terms if decode_estimate is None else terms.for_call(decode_estimate, waiting)

    def for_call(self, decode_estimate, waiting=None) -> ObjectiveTerms:
        """These terms at one routing call: the lifetimes of its waiting requests.

        ``decode_estimate``: the predictor's ``o_hat`` of the waiting requests
        (oldest first), or of every request of the workload with ``waiting``
        the waiting requests' indices. ``predicted``: ``l_j = max(1, o_hat_j)``
        (Section 4's ``W_hat_j(h) = s_j + h`` while the request is predicted to
        run); ``persist``: ``None`` (the estimate is not read)."""
        if self.new_requests == "persist":
            return self if self.lifetimes is None else self.with_lifetimes(None)
        if decode_estimate is None:
            raise ValueError("new_requests='predicted' needs the decode estimates o_hat_j of the waiting requests")
        est = np.asarray(decode_estimate, dtype=np.int64)
        return self.with_lifetimes(np.maximum(1, est if waiting is None else est[waiting]))

    def with_lifetimes(self, lifetimes) -> ObjectiveTerms:
        """The same terms with the given lifetimes ``l_j`` (``None``: every new
        request persists; the model follows: ``persist`` | ``predicted``)."""
        return ObjectiveTerms(self.horizon, self.window, self.discount,
                              "persist" if lifetimes is None else "predicted", self.weights, lifetimes)

    def full(self) -> ObjectiveTerms:
        """These terms over every offset ``0..H`` (what the exact backends solve)."""
        if self.window == self.horizon:
            return self
        return ObjectiveTerms(self.horizon, self.horizon, self.discount, self.new_requests,
                              offset_weights(self.horizon, self.discount), self.lifetimes)

    def fast(self) -> ObjectiveTerms:
        """These terms over the fast path's offsets ``0..effective_horizon(H, delta)``
        (the weights are the leading ones of this object's)."""
        window = effective_horizon(self.horizon, self.discount)
        if window == self.window:
            return self
        if window > self.window:
            raise ValueError(f"terms over offsets 0..{self.window} cannot give the fast window 0..{window}")
        return ObjectiveTerms(self.horizon, window, self.discount, self.new_requests,
                              np.ascontiguousarray(self.weights[:window + 1]), self.lifetimes)

    @property
    def offsets(self) -> int:
        """Number of offsets solved, ``window + 1`` (the width of the loads the consumer takes)."""
        return self.window + 1

    @property
    def integral(self) -> bool:
        """True when ``J`` is an integer for integer loads (``delta = 1``)."""
        return self.discount == 1.0

    def profiles(self, sizes: np.ndarray) -> np.ndarray:
        """``(n, window + 1)`` int64: what each waiting request of prefill ``sizes``
        adds at offset ``h`` if admitted (:func:`request_profiles`)."""
        return request_profiles(sizes, self.lifetimes, self.window)

    def request_values(self, sizes: np.ndarray) -> np.ndarray:
        """``sum_h w_h P_j(h)`` (float64): how much admitting request ``j`` lowers
        ``J`` through ``- sum_g Lhat_g(h)``, whatever worker it joins (the part of
        ``J`` that is linear in the admitted requests)."""
        return self.profiles(sizes).astype(np.float64) @ self.weights

    def evaluate(self, loads: np.ndarray):
        """``J`` of predicted loads ``(..., G, window + 1)`` (:func:`imbalance_objective`)."""
        return imbalance_objective(loads, self.weights)

    def kernel_arrays(self, base: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``(life, weights)``, the terms as the numba kernels take them
        (:func:`bfio.solvers.fast.solve_fast`, :func:`bfio.solvers.heap.solve_heap`):
        ``life[j]`` the lifetimes of the ``n`` waiting requests (:data:`PERSIST`
        when they persist) and the offset weights; ``base`` (the active
        requests' loads) must span exactly the offsets ``0..window``."""
        if base.shape[-1] != self.window + 1:
            raise ValueError(f"loads over {base.shape[-1]} offsets, the objective's terms are over "
                             f"0..{self.window} ({self.window + 1})")
        if self.lifetimes is None:
            if self.new_requests != "persist":
                raise ValueError("new_requests='predicted': bind the terms to the call first (for_call)")
            return persisting(n), self.weights
        if self.lifetimes.shape[0] != n:
            raise ValueError(f"{self.lifetimes.shape[0]} lifetimes for {n} waiting requests")
        return self.lifetimes, self.weights


__all__ = ["DEFAULT_DISCOUNT", "UNDISCOUNTED", "NEW_REQUEST_MODELS", "OBJECTIVES", "NEGLIGIBLE_WEIGHT", "PERSIST",
           "check_discount", "check_new_requests", "check_objective", "offset_weights", "effective_horizon",
           "request_profiles", "imbalance_objective", "persisting", "ObjectiveTerms"]
