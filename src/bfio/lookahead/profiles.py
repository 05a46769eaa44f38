"""Predicted loads of already-active requests over the lookahead window.

``Lhat_g(h)`` for ``h = 0..H`` (Section 4, ``../shared/spec/semantics.md`` "BF-IO"):
active request ``i`` with generated ``tau_i`` and predicted remaining steps
``r_i = max(1, o_hat_i - tau_i)`` contributes ``s_i + tau_i + h`` while
``h < r_i`` and nothing afterwards (:func:`predicted_loads`, integer).

The probabilistic predictors (``empirical``, ``geometric``) give instead the
probability ``q_i(h)`` that request ``i`` is still active at offset ``h``, and
its expected contribution ``(s_i + tau_i + h) q_i(h)`` (:func:`expected_loads`,
float; equal to :func:`predicted_loads` when every ``q_i(h)`` is 0 or 1).

Below both of its users: the predictors (:mod:`bfio.predictors`) and the
solvers (:mod:`bfio.solvers.instance`, BF-IO's policy) import it; it imports
neither.
"""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import kernel


@kernel
def predicted_loads(slot_request, prefill, generated, decode_estimate, horizon):
    """``(G, H+1)`` int64 array of ``Lhat_g(h)`` of the active requests.

    Difference arrays make this ``O(G B + G H)``: a request stops contributing
    at offset ``r_i`` (when ``r_i <= H``).
    """
    G, B = slot_request.shape
    H1 = horizon + 1
    out = np.zeros((G, H1), dtype=np.int64)
    dvol = np.zeros(H1 + 1, dtype=np.int64)
    dcnt = np.zeros(H1 + 1, dtype=np.int64)
    for g in range(G):
        vol = 0
        cnt = 0
        for h in range(H1 + 1):
            dvol[h] = 0
            dcnt[h] = 0
        for b in range(B):
            i = slot_request[g, b]
            if i < 0:
                continue
            tau = generated[i]
            v = prefill[i] + tau
            r = decode_estimate[i] - tau
            if r < 1:
                r = 1
            vol += v
            cnt += 1
            if r <= horizon:
                dvol[r] -= v
                dcnt[r] -= 1
        for h in range(H1):
            vol += dvol[h]
            cnt += dcnt[h]
            out[g, h] = vol + h * cnt
    return out


@kernel
def expected_loads(slot_request, prefill, generated, surv, tail_ratio, horizon):
    """``(G, H+1)`` float64 array of the *expected* ``Lhat_g(h)`` of the active requests.

    The probabilistic counterpart of :func:`predicted_loads` (Section 4's
    ``W_hat_i^H(k)`` as an expectation): active request ``i`` contributes
    ``(s_i + tau_i + h) * q_i(h)`` with ``q_i(h) = P(o_i > tau_i + h | o_i > tau_i)``,
    the probability that it is still decoding at offset ``h`` (the oracle's
    "``s_i + tau_i + h`` while ``h < r_i``" is the case ``q_i(h) in {0, 1}``).

    The decode-length survival ``S(t) = P(o > t)`` is given as a table
    ``surv[t]``, ``t = 0..T`` (``surv[0] = 1``), continued geometrically beyond
    ``T``: ``S(T + u) = surv[T] * tail_ratio**u``. So ``surv = [1.0]`` with
    ``tail_ratio = 1 - p`` is ``Geometric(p)`` (``q_i(h) = (1 - p)**h`` whatever
    ``tau_i``), and an empirical table ending in ``surv[T] = 0`` has finite
    support. A request that has outlived the support (``S(tau_i) = 0``, no
    evidence about it) is taken to persist over the window (``q_i = 1``, the
    ``none`` predictor's rule).

    ``O(G B H)`` for requests inside the table; requests in the geometric tail
    share ``q(h) = tail_ratio**h`` and are aggregated per worker (``O(G B + G H)``).
    """
    G, B = slot_request.shape
    H1 = horizon + 1
    T = surv.shape[0] - 1
    out = np.zeros((G, H1), dtype=np.float64)
    rho = np.empty(H1, dtype=np.float64)
    rho[0] = 1.0
    for h in range(1, H1):
        rho[h] = rho[h - 1] * tail_ratio
    for g in range(G):
        tvol = 0.0  # requests in the geometric tail
        tcnt = 0
        pvol = 0.0  # requests beyond a finite support: persist
        pcnt = 0
        for b in range(B):
            i = slot_request[g, b]
            if i < 0:
                continue
            tau = generated[i]
            v = prefill[i] + tau
            if tau >= T:
                if surv[T] > 0.0:
                    tvol += v
                    tcnt += 1
                else:
                    pvol += v
                    pcnt += 1
                continue
            s0 = surv[tau]
            if s0 <= 0.0:  # cannot happen for a non-increasing table with surv[T] > 0
                pvol += v
                pcnt += 1
                continue
            for h in range(H1):
                t = tau + h
                if t <= T:
                    q = surv[t] / s0
                else:  # t - T <= h <= H
                    q = surv[T] * rho[t - T] / s0
                if q <= 0.0:
                    break  # the table is non-increasing: q stays 0
                out[g, h] += (v + h) * q
        for h in range(H1):
            out[g, h] += (tvol + h * tcnt) * rho[h] + (pvol + h * pcnt)
    return out
