"""Power model and barrier-step energy (Section 5.4, Eq. (power-law), Eq. (E-discrete)).

Per-worker power within a barrier step is ``P(u_g) = P_idle + (P_max - P_idle) u_g^gamma``
with utilisation ``u_g = L_g / max_h L_h`` (Eq. (u-def)); a worker with ``u = 0``
draws ``P_idle``. These functions are shared by the simulator, the metrics and
the theory checks so every energy number in the project comes from one place.
"""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import kernel


@kernel
def worker_power(load, max_load, p_idle, p_max, gamma):
    """``P(u)`` for one worker with ``u = load / max_load`` (``P_idle`` if ``u = 0``)."""
    if max_load <= 0 or load <= 0:
        return p_idle
    return p_idle + (p_max - p_idle) * (load / max_load) ** gamma


@kernel
def step_power_sum(loads, p_idle, p_max, gamma):
    """``sum_g P(u_g)`` over the workers of one step, ``u_g = L_g / max L``."""
    m = 0.0
    for g in range(loads.shape[0]):
        if loads[g] > m:
            m = loads[g]
    total = 0.0
    for g in range(loads.shape[0]):
        total += worker_power(loads[g], m, p_idle, p_max, gamma)
    return total


def power(u, p_idle: float = 100.0, p_max: float = 400.0, gamma: float = 0.7):
    """Vectorised ``P(u)`` of Eq. (power-law) with ``mfu/mfu_sat = u``."""
    u = np.asarray(u, dtype=float)
    return np.where(u > 0, p_idle + (p_max - p_idle) * np.clip(u, 0, None) ** gamma, p_idle)


def energy_limit(p_idle: float = 100.0, p_max: float = 400.0, gamma: float = 0.7) -> float:
    """Corollary 1: ``P_idle / ((1 - gamma) P_max + gamma P_idle)`` (52.6% for A100)."""
    return p_idle / ((1.0 - gamma) * p_max + gamma * p_idle)


def energy_saving_bound(alpha: float, eta_sum: float, p_idle: float = 100.0,
                        p_max: float = 400.0, gamma: float = 0.7) -> float:
    """Theorem 4, Eq. (energy-saving-frac): lower bound on the saving fraction
    given the imbalance ratio ``alpha`` and baseline ``eta_sum = ImbTot/W``."""
    c_gamma = (1.0 - gamma) * p_max + gamma * p_idle
    d_gamma = (1.0 - gamma) * (p_max - p_idle)
    return (p_idle * (1.0 - 1.0 / alpha) - d_gamma / alpha) / (p_max / eta_sum + c_gamma)


def energy_decomposition(loads_per_step: np.ndarray, kappa: float, p_idle: float = 100.0,
                         p_max: float = 400.0, gamma: float = 0.7) -> dict:
    """Theorem 4's exact decomposition of synchronized-phase energy.

    ``loads_per_step`` is ``(K, G)``: the loads that gate each step. Returns
    ``E = kappa sum_k Lmax(k) sum_g P(u_g(k))``, ``W``, ``ImbTot`` and the
    concavity ``correction = E - kappa P_max W - kappa P_idle ImbTot`` with its
    bound ``kappa D_gamma ImbTot``.
    """
    L = np.asarray(loads_per_step, dtype=float)
    lmax = L.max(axis=1)
    G = L.shape[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        u = np.where(lmax[:, None] > 0, L / np.where(lmax[:, None] > 0, lmax[:, None], 1.0), 0.0)
    E = kappa * float(np.sum(lmax * power(u, p_idle, p_max, gamma).sum(axis=1)))
    W = float(L.sum())
    imb_tot = float(np.sum(G * lmax - L.sum(axis=1)))
    d_gamma = (1.0 - gamma) * (p_max - p_idle)
    correction = E - kappa * p_max * W - kappa * p_idle * imb_tot
    return {"energy": E, "work": W, "imbalance_total": imb_tot, "correction": correction,
            "correction_bound": kappa * d_gamma * imb_tot}
