"""The balanced (pooled) reference (issue 44): a run with the imbalance removed,
the router-independent goodput reference of the goodput study
(``simulate(reference="balanced")``, :mod:`bfio.studies.goodput_study`).

The run is the same workload, arrivals, seed, SLOs, KV memory, preemption rule,
prefill model and step model as the cluster's, on **one pooled rank** of the
cluster's resources, admitting first come, first served:

- ``G B`` slots; KV memory ``G kv_tokens`` (the preemption rule runs on it);
- prefill: ``G chunk_tokens`` prompt tokens a step, at most ``chunk_tokens`` of
  one request (its own rank's budget: a prompt is not split over ranks);
- the step charged as if each of the ``G`` ranks held ``1/G`` of the pool:
  ``rank_cost(L/G, n/G, P/G) + beta n/G + comm`` (calibrated; ``L``, ``n``, ``P``
  the pool's resident tokens, decoding requests and prefill tokens of the step),
  ``C(B) + t_l L/G + token_s P/G`` (the paper's). On one rank these are the
  ordinary kernels with scaled coefficients (:func:`balanced`): ``a_kv/G``,
  ``a_n/G``, ``a_p/G``, ``a_p2/G^2``, ``beta/G``; ``t_l/G``, ``token_s/G``, ``C``
  of ``B`` slots. With ``G = 1`` every value is the cluster's, bit for bit.

**Why it bounds, step by step.** Take any router's state at a step: the resident
tokens ``L_g``, decoding requests ``n_g`` and prefill tokens ``P_g`` of each rank.
The lockstep step is ``max_g f(L_g, n_g, P_g) + beta max_g n_g + comm`` with ``f =
alpha + a_kv L + a_n n + a_p P + a_p2 P^2`` convex (affine in ``L`` and ``n``,
``a_p2 >= 0``), so ``max_g f(...) >= mean_g f(...) >= f(mean L, mean n, mean P)``
(Jensen) and ``max_g n_g >= mean n``: the pooled step of the same state is never
longer (the paper's step likewise: ``max >= mean``). And the pooled rank can hold
every state a router can: ``sum_g n_g <= G B`` slots, ``sum_g KV_g <= G kv_tokens``,
``sum_g P_g <= G chunk_tokens`` with at most ``chunk_tokens`` of one request. So
whatever any placement does in a step, the pool can do with a step no longer.

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

Left out (the reference is looser for them): a request's decode load is not
indivisible here (the rank holding a request of ``l`` tokens steps at least
``f(l, 1, 0)``; :func:`bfio.capacity.indivisible_floor` measures that part in a
run). Not modelled: prefix caches (``cache_blocks``: an LRU cache per rank has no
pooled equivalent that dominates it) and independent ranks (no barrier, so no
imbalance in the step's sense); both are refused. The energy of a reference run
is not the cluster's (its power model sees one rank).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from bfio.errors import ConfigError

if TYPE_CHECKING:
    from bfio.sim.setup import Setup
    from bfio.step_model import StepCoefficients

#: what ``simulate(reference=...)`` runs: ``none`` (the cluster itself) or
#: ``balanced`` (:func:`balanced`); the single source of the names
REFERENCES = ("none", "balanced")
#: the policy and dispatch the balanced reference admits with (FCFS into the pool)
BALANCED_POLICY, BALANCED_DISPATCH = "fcfs", "central"


def check_reference(reference, policy, dispatch: str, prefill, step_model) -> str:
    """``reference`` checked against the run: a name of :data:`REFERENCES`; ``balanced``
    admits FCFS from the central pool, with the lockstep barrier and no prefix cache."""
    if reference not in REFERENCES:
        raise ConfigError(f"reference: must be one of {', '.join(REFERENCES)}, got {reference!r}")
    if reference == "none":
        return reference
    if policy.name != BALANCED_POLICY or dispatch != BALANCED_DISPATCH:
        raise ConfigError(f"reference: 'balanced' admits first come, first served into one pool: policy "
                          f"'{BALANCED_POLICY}' with dispatch '{BALANCED_DISPATCH}', got '{policy.name}' with "
                          f"'{dispatch}'")
    if not step_model.is_paper and step_model.barrier != "lockstep":
        raise ConfigError("reference: 'balanced' removes the imbalance at the lockstep barrier; independent ranks "
                          "wait at none (step_model.barrier: 'lockstep')")
    if prefill is not None and prefill.cache_blocks is not None:
        raise ConfigError("reference: 'balanced' with prefix caches (prefill.cache_blocks) is not modelled: a "
                          "per-rank LRU cache has no pooled equivalent that dominates it")
    return reference


def pooled_coefficients(coefficients: StepCoefficients, workers: int) -> StepCoefficients:
    """The calibrated step of one rank holding ``1/G`` of the pool's ``L``, ``n`` and
    ``P`` (module docstring): the per-token and per-request terms divided by ``G``,
    the prefill square by ``G^2``; ``alpha`` and ``comm`` as they are."""
    g = float(workers)
    c = coefficients
    return replace(c, a_kv=c.a_kv / g, a_n=c.a_n / g, a_p=c.a_p / g, a_p2=c.a_p2 / (g * g), beta=c.beta / g)


def balanced(run: Setup) -> Setup:
    """The run's balanced reference (module docstring): one rank of ``G B`` slots with
    the cluster's KV memory and prefill budget pooled and its step charged at the
    mean rank; ``pooled_ranks`` records ``G``."""
    G, B, c = run.workers, run.slots, run.constants
    prefill = run.prefill
    if prefill is not None:
        prefill = replace(prefill, chunk_tokens=G * prefill.chunk_tokens, request_chunk_tokens=prefill.request_chunk,
                          token_s=prefill.token_s / G,
                          kv_tokens=None if prefill.kv_tokens is None else G * prefill.kv_tokens)
    coefficients = None if run.coefficients is None else pooled_coefficients(run.coefficients, G)
    return replace(run, workers=1, slots=G * B, prefill=prefill, coefficients=coefficients, pooled_ranks=G,
                   constants=replace(c, token_latency_s=c.token_latency_s / G, overhead_s=c.overhead(B)))


__all__ = ["BALANCED_DISPATCH", "BALANCED_POLICY", "REFERENCES", "balanced", "check_reference",
           "pooled_coefficients"]
