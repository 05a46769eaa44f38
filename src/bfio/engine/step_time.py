"""Numba kernels of the calibrated step time (``docs/step_model.md``): the
lockstep barrier's ``dt`` from the per-rank loads ``L_g``, decoding requests
``n_g`` and prefill tokens ``P_g`` of one step, and a coefficient vector
(:meth:`bfio.step_model.fit.StepCoefficients.array`):
``[alpha, a_kv, a_n, a_p, a_p2, beta, comm]``. An empty vector means the
paper's ``dt``: the step kernels then compute it as they always did. A vector
of :data:`N_BALANCED` entries is the balanced reference's step
(:func:`balanced_dt`, :mod:`bfio.sim.pooled`)."""

from __future__ import annotations

import math

import numpy as np

from bfio.ground.jit import kernel

#: indices into the coefficient vector
K_ALPHA, K_KV, K_N, K_P, K_P2, K_BETA, K_COMM = range(7)
N_COEF = 7
#: the balanced reference's vector (:func:`balanced_dt`): the coefficients, then the
#: ranks ``G`` pooled, whether the step is the paper's sum of maxima (1) or the
#: calibrated maximum of rank costs (0), and whether no request is split (1)
K_RANKS, K_SEPARABLE, K_INDIVISIBLE = range(N_COEF, N_COEF + 3)
N_BALANCED = N_COEF + 3


@kernel
def rank_cost(coef, load, n, p):
    """One rank's share of a step: ``alpha + a_kv L + a_n n + a_p P + a_p2 P^2``
    (every coefficient >= 0: monotone in ``L``, ``n`` and ``P``)."""
    return coef[K_ALPHA] + coef[K_KV] * load + coef[K_N] * n + coef[K_P] * p + coef[K_P2] * p * p


@kernel
def rank_costs(coef, loads, n, p, out):
    """``out[g] = rank_cost(coef, loads[g], n[g], p[g])`` for every rank ``g``: the ranks'
    shares of a step in one call (a transfer's charge, :mod:`bfio.sim.transfer`).
    Invariant: entry by entry the scalar :func:`rank_cost`, so the same floats."""
    for g in range(out.shape[0]):
        out[g] = rank_cost(coef, loads[g], n[g], p[g])
    return out


@kernel
def prefill_cost(coef, tokens, chunk, out):
    """``out[k]``: the seconds the steps that compute ``tokens[k]`` prompt tokens of one
    request (at most ``chunk`` a step, alone on its rank) add to that rank's share,
    read from :func:`rank_cost`: ``q (rank_cost(0, 0, C) - rank_cost(0, 0, 0)) +
    rank_cost(0, 0, r) - rank_cost(0, 0, 0)``, ``q, r = divmod(tokens[k], C)``; with the
    calibrated coefficients ``a_p T + a_p2 (q C^2 + r^2)``, with the paper's prefill
    (``a_p = token_s``, the rest 0: :func:`prefill_vector`) ``token_s T``. A migration's
    recompute cost (issue 45, :mod:`bfio.sim.migration_kv`). Invariant: 0 at 0 tokens,
    non-decreasing in the tokens."""
    base = rank_cost(coef, 0.0, 0.0, 0.0)
    full = rank_cost(coef, 0.0, 0.0, float(chunk)) - base
    for k in range(tokens.shape[0]):
        t = max(tokens[k], 0.0)
        q = math.floor(t / chunk)
        r = t - q * chunk
        out[k] = q * full + (rank_cost(coef, 0.0, 0.0, r) - base)
    return out


def prefill_vector(coefficients, token_s: float) -> np.ndarray:
    """The coefficient vector whose :func:`rank_cost` prices a rank's prefill tokens as
    the run's step does: the calibrated coefficients (``StepCoefficients.array()``), or
    with the paper's step (``None``) ``a_p = token_s``, every other entry 0 (its prefill
    phase ``token_s max_g P_g``)."""
    if coefficients is not None:
        return np.asarray(coefficients.array(), dtype=np.float64)
    vec = np.zeros(N_COEF)
    vec[K_P] = float(token_s)
    return vec


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
def rank_step_dt(coef, load, n, p):
    """One rank's step on its own clock (no barrier, ``barrier: independent``):
    ``rank_cost(L, n, P) + beta n`` (its batch padded to itself; no DP collective).
    Invariant: the lockstep step of that rank alone less ``comm``."""
    return rank_cost(coef, load, n, p) + coef[K_BETA] * n


@kernel
def independent_dt(coef, load, n):
    """:func:`rank_step_dt` of a decode-only step (``P = 0``)."""
    return rank_step_dt(coef, load, n, 0)


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


@kernel
def balanced_dt(coef, slot_request, prefill, generated, left, take, loads, chunked):
    """The step of the balanced reference's one pooled rank (:mod:`bfio.sim.pooled`),
    read before the step is applied: the pool's resident tokens ``L = sum loads``,
    decoding requests ``n`` and prefill tokens ``P`` (with ``chunked``: ``take`` of
    this step, a request decoding once ``left_i = 0``; else ``left`` and ``take``
    are not read and every seated request decodes), charged as if each of the
    ``G = coef[K_RANKS]`` ranks held ``1/G`` of them:

    - calibrated (``coef[K_SEPARABLE] = 0``): ``rank_cost(L/G, n/G, P/G) + beta n/G + comm``;
    - the paper's (``1``; ``alpha = C``, ``a_kv = t_l``, ``a_p = token_s``):
      ``C + t_l L/G + token_s P/G``.

    With ``coef[K_INDIVISIBLE] = 1`` no request is split over ranks: the rank that
    holds request ``i`` (``l_i = s_i + tau_i - left_i`` resident, ``d_i`` decoding,
    ``p_i`` prefill tokens) costs at least ``rank_cost(l_i, d_i, p_i)``, and some
    rank decodes at least ``ceil(n/G)`` requests, so the calibrated step is
    ``max(rank_cost(L/G, n/G, P/G), max_i rank_cost(l_i, d_i, p_i)) + beta
    ceil(n/G) + comm`` and the paper's ``C + t_l max(L/G, max_i l_i) + token_s
    max(P/G, max_i p_i)``. Every form is at most the lockstep step of any
    placement of the same requests on ``G`` ranks (``max_g >= mean_g``, the rank
    cost convex: Jensen). Invariant: with ``G = 1`` the cluster's own ``dt``."""
    g = coef[K_RANKS]
    whole = 0
    for r in range(loads.shape[0]):
        whole += loads[r]
    n = 0
    p = 0
    l_max = 0
    p_max = 0
    f_max = 0.0
    for r in range(slot_request.shape[0]):
        for b in range(slot_request.shape[1]):
            i = slot_request[r, b]
            if i < 0:
                continue
            lf = left[i] if chunked else 0
            pi = take[r, b] if chunked else 0
            li = prefill[i] + generated[i] - lf
            di = 1 if lf == 0 else 0
            n += di
            p += pi
            l_max = max(l_max, li)
            p_max = max(p_max, pi)
            f_max = max(f_max, rank_cost(coef, li, di, pi))
    indivisible = coef[K_INDIVISIBLE] > 0
    if coef[K_SEPARABLE] > 0:
        lx = whole / g
        px = p / g
        if indivisible:
            lx = max(lx, l_max)
            px = max(px, p_max)
        if chunked:
            return coef[K_ALPHA] + coef[K_KV] * lx + coef[K_P] * px
        return coef[K_ALPHA] + coef[K_KV] * lx
    worst = rank_cost(coef, whole / g, n / g, p / g)
    batch = n / g
    if indivisible:
        worst = max(worst, f_max)
        batch = math.ceil(batch)
    return worst + coef[K_BETA] * batch + coef[K_COMM]
