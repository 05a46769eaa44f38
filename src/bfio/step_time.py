"""Numba kernels of the calibrated step time (``docs/step_model.md``): the
lockstep barrier's ``dt`` from the per-rank loads ``L_g``, decoding requests
``n_g`` and prefill tokens ``P_g`` of one step, and a coefficient vector
(:meth:`bfio.step_model.fit.StepCoefficients.array`):
``[alpha, a_kv, a_n, a_p, a_p2, beta, comm]``. An empty vector means the
paper's ``dt``: the step kernels then compute it as they always did."""

from __future__ import annotations

from bfio.jit import kernel

#: indices into the coefficient vector
K_ALPHA, K_KV, K_N, K_P, K_P2, K_BETA, K_COMM = range(7)
N_COEF = 7


@kernel
def rank_cost(coef, load, n, p):
    """One rank's share of a step: ``alpha + a_kv L + a_n n + a_p P + a_p2 P^2``
    (every coefficient >= 0: monotone in ``L``, ``n`` and ``P``)."""
    return coef[K_ALPHA] + coef[K_KV] * load + coef[K_N] * n + coef[K_P] * p + coef[K_P2] * p * p


@kernel
def lockstep_dt(coef, loads, active):
    """The lockstep step without prefill: ``max_g rank_cost(L_g, n_g, 0) + beta
    max_g n_g + comm``, ``n_g = active[g]`` (every active request decodes).
    Invariant: with ``beta = comm = 0`` and one rank, that rank's cost."""
    worst = 0.0
    n_max = 0
    for g in range(loads.shape[0]):
        c = rank_cost(coef, loads[g], active[g], 0)
        if g == 0 or c > worst:
            worst = c
        if active[g] > n_max:
            n_max = active[g]
    return worst + coef[K_BETA] * n_max + coef[K_COMM]


@kernel
def lockstep_prefill_dt(coef, slot_request, left, take, loads):
    """The lockstep step with chunked prefill, read before the step is applied:
    per rank ``L_g = loads[g]`` (resident tokens), ``n_g`` its requests whose
    prefill is done (they decode) and ``P_g = sum_b take[g, b]`` (its chunk);
    ``max_g rank_cost + beta max_g n_g + comm``."""
    G, B = slot_request.shape
    worst = 0.0
    n_max = 0
    for g in range(G):
        n = 0
        p = 0
        for b in range(B):
            i = slot_request[g, b]
            if i >= 0:
                if left[i] > 0:
                    p += take[g, b]
                else:
                    n += 1
        c = rank_cost(coef, loads[g], n, p)
        if g == 0 or c > worst:
            worst = c
        if n > n_max:
            n_max = n
    return worst + coef[K_BETA] * n_max + coef[K_COMM]


@kernel
def independent_dt(coef, load, n):
    """One rank's step on its own clock (no barrier, ``barrier: independent``):
    ``rank_cost(L, n, 0) + beta n`` (its batch padded to itself; no DP collective)."""
    return rank_cost(coef, load, n, 0) + coef[K_BETA] * n


@kernel
def advance_ranks(slot_request, prefill, decode, generated, finish, finish_step, clock, step, loads, active,
                  completed, n_completed, stepping, started, start):
    """The steps of the ranks with ``stepping[g]`` end at ``clock`` (independent
    ranks): each request of such a rank that was seated when its step started
    (``start[i] <= started[g]``) generates a token, those with ``tau_i >= o_i``
    retire (appended to ``completed`` from ``n_completed``); a request seated
    mid-step only counts in the load. Rewrites ``loads`` and ``active`` of the
    stepping ranks. Returns ``(completions, tokens generated)``."""
    G, B = slot_request.shape
    done = 0
    tokens = 0
    for g in range(G):
        if not stepping[g]:
            continue
        total = 0
        n = 0
        for b in range(B):
            i = slot_request[g, b]
            if i < 0:
                continue
            if start[i] <= started[g]:
                t = generated[i] + 1
                generated[i] = t
                tokens += 1
                if t >= decode[i]:
                    finish[i] = clock
                    finish_step[i] = step
                    slot_request[g, b] = -1
                    completed[n_completed + done] = i
                    done += 1
                    continue
            total += prefill[i] + generated[i]
            n += 1
        loads[g] = total
        active[g] = n
    return done, tokens
