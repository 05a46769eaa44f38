"""Drift sequences ``delta_k`` of Definition 3 (non-decreasing workload drift, Theorem 3).

Every alive request gains a common increment ``delta_k`` at global step ``k``
(``0 <= delta_k <= delta_max``). Kinds:

- ``zero``: ``delta_k = 0`` (constant work per step, classical load balancing);
- ``one``: ``delta_k = 1`` (LLM decode, Theorem 2);
- ``periodic``: a bounded periodic sequence ``values[k mod len(values)]``;
- ``random``: i.i.d. uniform on ``[low, high]`` drawn once with a fixed seed
  (a deterministic sequence for the theorem);
- ``speculative``: common per-step increments uniform on ``{1..4}`` (every alive
  request accepts the same number of draft tokens; covered by Definition 3);
- ``speculative_per_request``: each request draws its own increment in
  ``{1..4}`` every step (realistic speculative decoding; *not* covered by
  Definition 3 because the increments are not common -- reported as an
  extension).

Definition 3 indexes ``delta`` by the request's own step ``j``
(``w^(j) = s + sum_{t<j} delta_t``) while the text and the proof use a common
increment at global step ``k``; ``index = "global"`` (default) follows the
proof, ``"local"`` follows the printed definition.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# increment modes understood by the slot-model kernel
MODE_GLOBAL = 0
MODE_LOCAL = 1
MODE_PER_REQUEST = 2


@dataclass(frozen=True)
class Drift:
    """A drift: ``mode`` for the kernel, the sequence ``delta`` (length >= steps)
    and, for per-request increments, the integer range ``[lo, hi]``."""

    name: str
    mode: int
    delta: np.ndarray
    per_request_lo: int = 1
    per_request_hi: int = 4
    covered: bool = True  # covered by Definition 3 / Theorem 3

    @property
    def delta_max(self) -> float:
        if self.mode == MODE_PER_REQUEST:
            return float(self.per_request_hi)
        return float(self.delta.max()) if self.delta.size else 0.0

    def sequence(self, n: int) -> np.ndarray:
        """``delta`` repeated (periodically) to at least ``n`` entries."""
        d = self.delta
        if d.size >= n:
            return d
        if d.size == 0:
            return np.zeros(n)
        return np.tile(d, int(np.ceil(n / d.size)))

    def increment_moments(self) -> tuple[float, float]:
        """Mean and variance of one per-request increment (per-request mode)."""
        v = np.arange(self.per_request_lo, self.per_request_hi + 1, dtype=float)
        return float(v.mean()), float(v.var())


def make_drift(spec: dict, steps: int, seed: int = 0) -> Drift:
    """Build a :class:`Drift` of length ``steps`` from a config entry."""
    kind = spec["kind"]
    name = spec.get("name", kind)
    index = spec.get("index", "global")
    mode = MODE_LOCAL if index == "local" else MODE_GLOBAL
    if kind == "zero":
        delta = np.zeros(steps)
    elif kind == "one":
        delta = np.ones(steps)
    elif kind == "periodic":
        vals = np.asarray(spec.get("values", [0.0, 1.0, 2.0, 1.0]), dtype=float)
        delta = vals[np.arange(steps) % vals.size]
    elif kind == "random":
        rng = np.random.default_rng([seed, int(spec.get("seed", 7))])
        delta = rng.uniform(float(spec.get("low", 0.0)), float(spec.get("high", 2.0)), steps)
    elif kind == "speculative":
        rng = np.random.default_rng([seed, int(spec.get("seed", 11))])
        delta = rng.integers(int(spec.get("low", 1)), int(spec.get("high", 4)) + 1, steps).astype(float)
    elif kind == "speculative_per_request":
        return Drift(name, MODE_PER_REQUEST, np.zeros(steps), int(spec.get("low", 1)),
                     int(spec.get("high", 4)), covered=False)
    else:
        raise ValueError(f"unknown drift kind {kind!r}")
    if np.any(delta < 0):
        raise ValueError("Definition 3 needs delta_k >= 0")
    return Drift(name, mode, np.ascontiguousarray(delta, dtype=np.float64))
