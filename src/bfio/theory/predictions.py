"""What Theorems 2 and 3 predict for the slot model (Appendix C.2, C.3): the
snapshot mean and variance of a slot's gating load (exact over a window, and
Theorem 2's closed form) and the theorems' imbalance rates without their
constant ``c`` (fitted by :mod:`bfio.theory.fit`).
"""

from __future__ import annotations

import numpy as np

from bfio.theory.distributions import PrefillLaw
from bfio.theory.drift import MODE_LOCAL, MODE_PER_REQUEST, Drift


def snapshot_moments(law: PrefillLaw, p: float, drift: Drift, window: tuple[int, int],
                     tail: float = 1e-13) -> tuple[float, float]:
    """Theoretical pooled mean and variance of a slot's gating load over the
    window steps ``[k0, k1)`` (FCFS, and by the common active set, any policy).

    At step ``k`` the slot's request has done ``A`` steps with
    ``P(A = a) = p (1-p)^a`` (``a < k``), ``P(A = k) = (1-p)^k`` (initial fill),
    independent of its prompt ``S``; its load is ``S + D`` where ``D`` is the sum
    of its ``A`` increments. For ``delta = 1`` in stationarity this is
    ``mu_s + (1-p)/p`` and ``sigma_s^2 + (1-p)/p^2`` (Appendix C.2, Eq. (U-mean-var)).
    """
    k0, k1 = window
    amax = int(np.ceil(np.log(tail) / np.log(1 - p))) + 1
    mu, es2 = law.mean, law.var + law.mean**2
    m1s, m2s = [], []
    if drift.mode == MODE_PER_REQUEST:
        mi, vi = drift.increment_moments()
    seq = drift.sequence(max(k1, amax) + 2)
    cum_local = np.concatenate([[0.0], np.cumsum(seq[:amax + 1])])
    for k in range(k0, k1):
        a = np.arange(0, min(k, amax) + 1)
        w = p * (1 - p) ** a
        if a[-1] == k:
            w[-1] = (1 - p) ** k
        if drift.mode == MODE_PER_REQUEST:
            d1 = mi * a
            d2 = vi * a + (mi * a) ** 2
        elif drift.mode == MODE_LOCAL:
            d1 = cum_local[a]
            d2 = d1**2
        else:
            # increments applied after steps k-a .. k-1 (delta index k-1, ..., k-a)
            c = np.concatenate([[0.0], np.cumsum(seq[k - 1::-1][: a[-1]])]) if k > 0 else np.zeros(1)
            d1 = c[a]
            d2 = d1**2
        ed1 = float(np.dot(w, d1))
        ed2 = float(np.dot(w, d2))
        m1s.append(mu + ed1)
        m2s.append(es2 + 2 * mu * ed1 + ed2)
    m1 = float(np.mean(m1s))
    return m1, float(np.mean(m2s) - m1**2)


def geometric_snapshot(law: PrefillLaw, p: float) -> tuple[float, float]:
    """Closed form of Theorem 2's snapshot: ``mu_s + (1-p)/p``, ``sigma_s^2 + (1-p)/p^2``."""
    return law.mean + (1 - p) / p, law.var + (1 - p) / p**2


def theorem2_rate(law: PrefillLaw, G: int, B: int, p: float) -> float:
    """Eq. (IR-inhomog-lb) without ``c``:
    ``(p/s_max) sqrt(sigma_s^2 + (1-p)/p^2) G/(G-1) sqrt(B log G)``."""
    return (p / law.s_max) * np.sqrt(law.var + (1 - p) / p**2) * G / (G - 1) * np.sqrt(B * np.log(G))


def theorem3_rate(law: PrefillLaw, G: int, B: int, p: float) -> float:
    """Eq. (IR-general-lb) without ``c``: ``(p sigma_s / s_max) G/(G-1) sqrt(B log G)``."""
    return (p * law.std / law.s_max) * G / (G - 1) * np.sqrt(B * np.log(G))
