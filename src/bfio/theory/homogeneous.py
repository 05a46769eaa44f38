"""Theorem 1 (homogeneous decode lengths): one admission round.

``G*B`` i.i.d. prefill lengths on ``{1..s_max}``; FCFS gives worker ``g`` the
prompts ``g*B .. g*B + B - 1`` in arrival order; BF-IO partitions them into
``G`` groups of ``B`` minimising the maximum load (here: the sorted-rounds
assignment of :mod:`bfio.theory.assign`, which is provably ``s_max``-balanced;
the LP bound ``ceil(sum/G)`` certifies optimality on the samples that reach it
and gives an upper bound on the exact BF-IO's IIR). With ``o`` identical decode
steps every step of the round has the same imbalance ``Imb = G max L - sum L``,
so ``IIR = E[Imb(FCFS)] / E[Imb(BF)]`` (Appendix C.1, "Reduction to a single
admission round").

Checked per cell:

- Lemma 1 on every sample: ``max L - min L <= s_max`` for the BF-IO assignment;
- Eq. (BF-upper) on every sample: ``Imb(BF) <= (G-1) s_max``;
- Eq. (FCFS-lb) with the proof's explicit constant
  ``c_2 = (1 - exp(-1/(4 sqrt(2 pi))))/sqrt(2)``:
  ``E[Imb(FCFS)] >= c_2 G sigma_s sqrt(B log G)`` (the proof needs
  ``log G >= 4`` and ``B >= B_0(G)``; reported everywhere, flagged);
- Eq. (IR-homog-lb) with ``kappa_0 = sigma_s/s_max`` and ``c = c_2``.
"""

from __future__ import annotations

import numpy as np

from bfio.theory.assign import fcfs_round_loads, sorted_rounds_loads
from bfio.theory.distributions import PrefillLaw
from bfio.theory.estimates import mean_se, ratio_se
from bfio.theory.slot_model import cell_seed


def imbalance(loads: np.ndarray) -> np.ndarray:
    """``G max_g L_g - sum_g L_g`` per row (Eq. (imbalancek))."""
    return loads.shape[1] * loads.max(axis=1) - loads.sum(axis=1)


def theorem1_rate(law: PrefillLaw, G: int, B: int) -> float:
    """Eq. (IR-homog-lb) without ``c``: ``(sigma_s/s_max) sqrt(B log G) G/(G-1)``."""
    return law.kappa * np.sqrt(B * np.log(G)) * G / (G - 1)


def round_loads(law: PrefillLaw, G: int, B: int, samples: int, seed: int, bf_assign=None):
    """Draw ``samples`` rounds; return ``(prompts, fcfs_loads, bf_loads)``.

    ``bf_assign(prompts, G, B) -> loads`` replaces the BF-IO assignment (tests
    pass :func:`fcfs_round_loads` to check that the checks fail)."""
    rng = np.random.default_rng(cell_seed(seed, "thm1", law.name, G, B))
    prompts = law.sample(rng, (samples, G * B))
    f = fcfs_round_loads(prompts, G, B)
    b = (bf_assign or sorted_rounds_loads)(prompts, G, B)
    return prompts, f, b


def homogeneous_cell(law: PrefillLaw, G: int, B: int, samples: int, seed: int, bf_assign=None) -> tuple[dict, dict]:
    """Estimates for one ``(law, G, B)`` cell, and the raw loads for the energy check."""
    prompts, f, b = round_loads(law, G, B, samples, seed, bf_assign)
    imb_f, imb_b = imbalance(f), imbalance(b)
    gap_b = b.max(axis=1) - b.min(axis=1)
    total = prompts.sum(axis=1).astype(float)
    lb_max = np.ceil(total / G)
    imb_lb = G * lb_max - total  # smallest possible imbalance given the sum
    row = {"G": G, "B": B, "samples": samples, **law.describe()}
    row["imb_fcfs"], row["imb_fcfs_se"] = mean_se(imb_f)
    row["imb_bf"], row["imb_bf_se"] = mean_se(imb_b)
    row["imb_lb"], row["imb_lb_se"] = mean_se(imb_lb)
    row["iir"], row["iir_se"] = ratio_se(imb_f, imb_b)
    row["iir_exact_upper"] = float(imb_f.mean() / imb_lb.mean()) if imb_lb.mean() > 0 else float("inf")
    row["bf_optimal_fraction"] = float(np.mean(b.max(axis=1) <= lb_max))
    row["lemma1_max_gap"] = float(gap_b.max())
    row["lemma1_violations"] = int(np.sum(gap_b > law.s_max))
    row["bf_upper_violations"] = int(np.sum(imb_b > (G - 1) * law.s_max))
    row["bf_upper_bound"] = float((G - 1) * law.s_max)
    row["rate"] = theorem1_rate(law, G, B)
    row["fcfs_lb_scale"] = float(G * law.std * np.sqrt(B * np.log(G)))
    row["proof_regime"] = bool(np.log(G) >= 4)
    return row, {"fcfs": f, "bf": b}
