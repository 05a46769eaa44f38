"""Predicted loads of already-active requests over the lookahead window.

``Lhat_g(h)`` for ``h = 0..H`` (Section 4, ``../shared/spec/semantics.md`` "BF-IO"):
active request ``i`` with generated ``tau_i`` and predicted remaining steps
``r_i = max(1, o_hat_i - tau_i)`` contributes ``s_i + tau_i + h`` while
``h < r_i`` and nothing afterwards.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
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
