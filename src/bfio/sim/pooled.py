"""The balanced (pooled) reference (issue 44): a run with the imbalance removed,
the router-independent goodput reference of the goodput study
(``simulate(reference="balanced")``, :mod:`bfio.studies.goodput_study`).

The run is the same workload, arrivals, seed, SLOs, KV memory, preemption rule,
prefill model and step model as the cluster's, on **one pooled rank** of the
cluster's resources, admitting first come, first served:

- ``G B`` slots; KV memory ``G kv_tokens`` (the preemption rule runs on it);
- prefill: ``G chunk_tokens`` prompt tokens a step, at most ``chunk_tokens`` of
  one request (its own rank's budget: a prompt is not split over ranks);
- the step charged as if each of the ``G`` ranks held ``1/G`` of the pool's
  resident tokens ``L``, decoding requests ``n`` and prefill tokens ``P``, but no
  request split (:func:`bfio.engine.step_time.balanced_dt`): calibrated,
  ``max(rank_cost(L/G, n/G, P/G), max_i rank_cost(l_i, d_i, p_i)) + beta ceil(n/G)
  + comm``; the paper's, ``C + t_l max(L/G, max_i l_i) + token_s max(P/G, max_i
  p_i)`` (``l_i``, ``d_i``, ``p_i``: request ``i``'s resident tokens, whether it
  decodes, its prefill tokens in the step). With ``G = 1`` this is the cluster's
  own step, bit for bit.

``reference="divisible"`` charges the mean rank alone (``rank_cost(L/G, n/G, P/G)
+ beta n/G + comm``, ``C + t_l L/G + token_s P/G``): requests split over ranks,
which no router can do. Its goodput is at least the balanced one's; the
difference is the model's (a long prompt's chunk holds every rank at the barrier
whatever the router), not headroom a router can recover.

**Why it bounds, step by step.** Take any router's state at a step: the resident
tokens ``L_g``, decoding requests ``n_g`` and prefill tokens ``P_g`` of each rank.
The lockstep step is ``max_g f(L_g, n_g, P_g) + beta max_g n_g + comm`` with ``f =
alpha + a_kv L + a_n n + a_p P + a_p2 P^2`` convex and non-decreasing (affine in
``L`` and ``n``, every coefficient >= 0). So ``max_g f(...) >= mean_g f(...) >=
f(mean L, mean n, mean P)`` (Jensen), ``max_g f(...) >= f(l_i, d_i, p_i)`` for
every request ``i`` (its rank holds at least it) and ``max_g n_g >= ceil(n/G)``
(``n_g`` are integers): the reference's step of the same state is never longer
(the paper's step likewise, each maximum on its own). And the pooled rank can
hold every state a router can: ``sum_g n_g <= G B`` slots, ``sum_g KV_g <= G
kv_tokens``, ``sum_g P_g <= G chunk_tokens`` with at most ``chunk_tokens`` of one
request. So whatever any placement does in a step, the pool can do with a step
no longer.

**Where it needs an assumption.** Goodput reads p99 TTFT and p99 TPOT over a run,
and the pool runs one fixed schedule: FCFS admission (a request is seated as soon
as a slot and its KV memory are free), its prefill oldest first, vLLM's or
SGLang's preemption. The step-wise dominance above does not make that schedule's
run dominate every router's run: seating more requests lengthens the steps of
those already running (a router that holds requests back can have shorter steps
for a while, trading TTFT for TPOT), and oldest-first prefill is not the order
that minimizes a p99. The reference is an upper bound of a router's goodput under
the assumption that, at the rates near the goodput, a work-conserving FCFS
schedule is what meets the targets best (delaying work only moves it later);
it is not a theorem. So it is checked, not assumed: ``tests/test_pooled.py`` (the
reference at least every router's goodput on small cases) and, per seed, the
goodput study's table counts the router runs above it.

Not modelled: prefix caches (``cache_blocks``: an LRU cache per rank has no
pooled equivalent that dominates it) and independent ranks (no barrier, so no
imbalance in the step's sense); both are refused. The energy of a reference run
is not the cluster's (its power model sees one rank).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from bfio.ground.errors import ConfigError
from bfio.engine.step_time import K_ALPHA, K_KV, K_P, N_BALANCED, N_COEF

if TYPE_CHECKING:
    from bfio.sim.setup import Setup

#: what ``simulate(reference=...)`` runs: ``none`` (the cluster itself), ``balanced``
#: (:func:`balanced`, no request split) or ``divisible`` (the mean rank alone); the
#: single source of the names, each with whether it keeps requests indivisible
REFERENCES = {"none": None, "balanced": True, "divisible": False}
#: the policy and dispatch a reference admits with (FCFS into the pool)
BALANCED_POLICY, BALANCED_DISPATCH = "fcfs", "central"


def check_reference(reference, policy, dispatch: str, prefill, step_model) -> str:
    """``reference`` checked against the run: a name of :data:`REFERENCES`; a reference
    admits FCFS from the central pool, with the lockstep barrier and no prefix cache."""
    if reference not in REFERENCES:
        raise ConfigError(f"reference: must be one of {', '.join(REFERENCES)}, got {reference!r}")
    if reference == "none":
        return reference
    if policy.name != BALANCED_POLICY or dispatch != BALANCED_DISPATCH:
        raise ConfigError(f"reference: '{reference}' admits first come, first served into one pool: policy "
                          f"'{BALANCED_POLICY}' with dispatch '{BALANCED_DISPATCH}', got '{policy.name}' with "
                          f"'{dispatch}'")
    if not step_model.is_paper and step_model.barrier != "lockstep":
        raise ConfigError(f"reference: '{reference}' removes the imbalance at the lockstep barrier; independent "
                          "ranks wait at none (step_model.barrier: 'lockstep')")
    if prefill is not None and prefill.cache_blocks is not None:
        raise ConfigError(f"reference: '{reference}' with prefix caches (prefill.cache_blocks) is not modelled: a "
                          "per-rank LRU cache has no pooled equivalent that dominates it")
    return reference


def step_vector(run: Setup, indivisible: bool) -> np.ndarray:
    """The pooled rank's step (:func:`bfio.engine.step_time.balanced_dt`'s vector): the run's
    calibrated coefficients, or the paper's ``C`` of ``B`` slots, ``t_l`` and the
    prefill model's ``token_s`` in their places; then ``G``, whether the step is the
    paper's and whether no request is split."""
    vec = np.zeros(N_BALANCED)
    if run.coefficients is not None:
        vec[:N_COEF] = run.coefficients.array()
    else:
        vec[K_ALPHA] = run.constants.overhead(run.slots)
        vec[K_KV] = run.constants.token_latency_s
        vec[K_P] = run.prefill.token_s if run.prefill is not None else 0.0
    vec[N_COEF:] = (run.workers, run.coefficients is None, indivisible)
    return vec


def reference_run(run: Setup, reference: str) -> Setup:
    """The run of ``reference`` (checked by :func:`check_reference`): ``run`` itself
    for ``none``, else its pooled rank (:func:`balanced`). Applied by the loop after
    :func:`bfio.sim.setup.setup`, so that the setup needs nothing of this module."""
    reference = check_reference(reference, run.policy, run.dispatch, run.prefill, run.step_model)
    return run if reference == "none" else balanced(replace(run, reference=reference))


def balanced(run: Setup) -> Setup:
    """The run's reference (module docstring): one rank of ``G B`` slots with the
    cluster's KV memory and prefill budget pooled, its step :func:`step_vector`;
    ``pooled_ranks`` records ``G``. ``run.reference`` names it."""
    G, B = run.workers, run.slots
    prefill = run.prefill
    if prefill is not None:
        prefill = replace(prefill, chunk_tokens=G * prefill.chunk_tokens, request_chunk_tokens=prefill.request_chunk,
                          kv_tokens=None if prefill.kv_tokens is None else G * prefill.kv_tokens)
    return replace(run, workers=1, slots=G * B, prefill=prefill, pooled_ranks=G,
                   step_coef=step_vector(run, REFERENCES[run.reference]))


__all__ = ["BALANCED_DISPATCH", "BALANCED_POLICY", "REFERENCES", "balanced", "check_reference", "step_vector"]
