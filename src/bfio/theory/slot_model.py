"""The overloaded slot model of Theorems 2 and 3 (Appendix C.2, C.3).

``G`` workers with ``B`` slots each. Requests ``i = 0, 1, ...`` arrive in index
order with i.i.d. prefill ``s_i ~ D_prefill`` and decode length
``o_i ~ Geo(p)`` on ``{1, 2, ...}``; request ``i``'s ``j``-th step has workload
``s_i + sum_{t<j} delta`` (Definition 3; ``delta = 1`` is Theorem 2's
``W_i = (s_i, s_i+1, ..., s_i+o_i-1)``). Step ``k``:

1. the *gating* loads ``L_g(k) = sum of the active requests' workloads`` are
   recorded (these are the paper's post-admission loads ``L_g(k-1)`` of the
   proofs, i.e. what the barrier step waits on);
2. every active request finishes its step; a request that has done ``o_i``
   steps completes and frees its slot, every survivor's workload grows by the
   drift increment;
3. the freed slots (``C_k = sum_g c_g(k)``) are refilled with the next ``C_k``
   requests of the waiting pool: FCFS fills worker 0's free slots first, then
   worker 1's, ...; BF-IO (``H = 0``) places the same ``C_k`` prompts to
   minimise the next step's maximum load (:func:`bfio.theory.assign.place_balanced`).

By memorylessness each slot completes with probability ``p`` every step,
independently, which is the proofs' Bernoulli(``p``) completion model. Because
completions depend only on the requests (not their slots) and both policies
admit the same next ``C_k`` requests, *both policies have the same active set
at every step*: only the partition into workers differs. Hence ``W`` and the
number of steps are policy independent (Theorem 4's setting holds exactly) and
the ratio of per-step averages equals the ratio of totals.

The waiting pool at every admission is the next ``pool`` requests; the kernel
records Definition 1's overload margin ``min_l |R_k \\ R_k(l)| - C_k`` (>= 0
means the instance is overloaded at that step). This BF-IO only *places* the
admitted prompts (it does not pick among the pool); the paper's BF-IO may also
choose which pool requests to admit, which can only help it. The proofs'
exchange arguments swap admitted prompts only, so the bounds apply to this
weaker variant.

After ``k_admit`` steps no more requests are admitted and the run drains, so
every admitted request completes: the energy check (Theorem 4) uses every step;
the steady-state estimates (:mod:`bfio.theory.estimates`) use the window
``[burn_in, k_admit)`` split into batches (batch means give the standard
errors); what the theorems predict is :mod:`bfio.theory.predictions`.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from bfio.ground.jit import kernel
from bfio.theory.assign import is_separated, place_balanced
from bfio.theory.distributions import PrefillLaw
from bfio.theory.drift import Drift

POLICY_FCFS = 0
POLICY_BF = 1


@kernel
def _splitmix(x):
    x = (x + np.uint64(0x9E3779B97F4A7C15))
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@kernel
def request_increment(seed, i, age, lo, hi):
    """Per-request increment in ``{lo..hi}`` of request ``i`` after its step ``age``
    (a hash, so it is the same under every policy)."""
    h = _splitmix(np.uint64(seed) ^ _splitmix(np.uint64(i) * np.uint64(1000003) + np.uint64(age)))
    return lo + int(h % np.uint64(hi - lo + 1))


@kernel
def simulate_slots(G, B, prefill, decode, k_admit, policy, mode, delta, inc_seed, inc_lo, inc_hi,
                   s_max, pool, max_swaps):
    """Run one policy on one request stream (module doc). Returns
    ``(loads (K, G), sum_y (K,), sum_y2 (K,), active (K,), certified (K,), swaps (K,),
    overload_margin (K,), admitted_total)`` where row ``k`` is step ``k``'s gating
    state, ``certified[k]`` is the BF-IO certificate of the admission after
    step ``k`` (1: gap <= s_max, 2: separated, 0: neither, -1: FCFS / none)."""
    N = prefill.shape[0]
    K_cap = k_admit + int(decode.max()) + 2
    loads = np.zeros((K_cap, G))
    sum_y = np.zeros(K_cap)
    sum_y2 = np.zeros(K_cap)
    active = np.zeros(K_cap, dtype=np.int64)
    certified = np.full(K_cap, -1, dtype=np.int64)
    swaps = np.zeros(K_cap, dtype=np.int64)
    margin = np.full(K_cap, np.iinfo(np.int64).max, dtype=np.int64)
    slot_req = np.full((G, B), -1, dtype=np.int64)
    slot_load = np.zeros((G, B))
    slot_age = np.zeros((G, B), dtype=np.int64)
    counts = np.zeros(s_max + 2, dtype=np.int64)
    pool_end = min(pool, N)
    for i in range(pool_end):
        counts[prefill[i]] += 1
    nxt = 0
    free = np.zeros(G, dtype=np.int64)
    pre = np.zeros(G)
    k = 0
    admit_now = True
    while True:
        if admit_now:
            # ---- admission into the free slots (initial fill at k = 0)
            C = 0
            for g in range(G):
                c = 0
                tot = 0.0
                for b in range(B):
                    if slot_req[g, b] < 0:
                        c += 1
                    else:
                        tot += slot_load[g, b]
                free[g] = c
                pre[g] = tot
                C += c
            U = min(C, N - nxt)
            if k > 0:
                pool_size = pool_end - nxt
                mx = 0
                for v in range(s_max + 2):
                    if counts[v] > mx:
                        mx = counts[v]
                margin[k] = pool_size - mx - C
            if U > 0:
                items = prefill[nxt:nxt + U].copy()
                if policy == POLICY_BF:
                    w, cert, sw = place_balanced(pre, free, items, s_max, max_swaps)
                    swaps[k] = sw
                    for j in range(U):
                        g = w[j]
                        for b in range(B):
                            if slot_req[g, b] < 0:
                                slot_req[g, b] = nxt + j
                                slot_load[g, b] = items[j]
                                slot_age[g, b] = 0
                                break
                else:
                    w = np.empty(U, dtype=np.int64)
                    j = 0
                    for g in range(G):
                        for b in range(B):
                            if j < U and slot_req[g, b] < 0:
                                slot_req[g, b] = nxt + j
                                slot_load[g, b] = items[j]
                                slot_age[g, b] = 0
                                w[j] = g
                                j += 1
                # certificate of the separation lemma, checked on the outcome of any policy
                for j in range(U):
                    pre[w[j]] += items[j]
                pmax = 0
                qmin = 0
                for g in range(G):
                    if pre[g] > pre[pmax]:
                        pmax = g
                    if pre[g] < pre[qmin]:
                        qmin = g
                if pre[pmax] - pre[qmin] <= s_max:
                    certified[k] = 1
                elif is_separated(w, items, pmax, qmin):
                    certified[k] = 2
                else:
                    certified[k] = 0
                for j in range(U):
                    counts[prefill[nxt + j]] -= 1
                nxt += U
                new_end = min(nxt + pool, N)
                for i in range(pool_end, new_end):
                    counts[prefill[i]] += 1
                pool_end = new_end
        # ---- gating loads of step k
        n = 0
        s1 = 0.0
        s2 = 0.0
        for g in range(G):
            tot = 0.0
            for b in range(B):
                if slot_req[g, b] >= 0:
                    y = slot_load[g, b]
                    tot += y
                    s1 += y
                    s2 += y * y
                    n += 1
            loads[k, g] = tot
        if n == 0:
            break
        sum_y[k] = s1
        sum_y2[k] = s2
        active[k] = n
        # ---- the step: completions and drift
        for g in range(G):
            for b in range(B):
                i = slot_req[g, b]
                if i >= 0:
                    a = slot_age[g, b] + 1
                    if a >= decode[i]:
                        slot_req[g, b] = -1
                        slot_load[g, b] = 0.0
                    else:
                        slot_age[g, b] = a
                        if mode == 0:
                            slot_load[g, b] += delta[k]
                        elif mode == 1:
                            slot_load[g, b] += delta[a - 1]
                        else:
                            slot_load[g, b] += request_increment(inc_seed, i, a, inc_lo, inc_hi)
        k += 1
        admit_now = k < k_admit
        if k >= K_cap:
            break
    return (loads[:k], sum_y[:k], sum_y2[:k], active[:k], certified[:k], swaps[:k], margin[:k], nxt)


# ----------------------------------------------------------------------------- drivers


def cell_seed(seed: int, *key) -> int:
    """A stable per-cell seed from the global seed and the cell's key."""
    return int(zlib.crc32(repr((seed,) + tuple(key)).encode()) ^ (seed * 2654435761 % 2**32))


@dataclass
class SlotRun:
    """Both policies on one request stream."""

    G: int
    B: int
    p: float
    law: PrefillLaw
    drift: Drift
    burn_in: int
    k_admit: int
    n_batches: int
    loads: dict          # policy -> (K, G) gating loads
    sum_y: np.ndarray    # per-step sum of slot loads (policy independent)
    sum_y2: np.ndarray
    active: np.ndarray
    certified: np.ndarray  # BF-IO certificates per admission
    swaps: np.ndarray
    margin: np.ndarray
    same_active: bool
    certified_fcfs: np.ndarray | None = None

    @property
    def steps(self) -> int:
        return int(self.active.shape[0])


def run_slot_model(law: PrefillLaw, G: int, B: int, p: float, drift: Drift, *, seed: int,
                   burn_in_mult: float = 8.0, batch_mult: float = 25.0, n_batches: int = 8,
                   pool_factor: float = 2.0, min_pool: int = 64, max_swaps: int = 100000,
                   bf_policy: int = POLICY_BF) -> SlotRun:
    """Simulate FCFS and BF-IO (H=0) on the same stream; ``bf_policy`` lets tests
    relabel FCFS as "BF-IO" to check that the checks can fail."""
    burn = max(1, int(np.ceil(burn_in_mult / p)))
    batch = max(1, int(np.ceil(batch_mult / p)))
    k_admit = burn + n_batches * batch
    pool = max(int(np.ceil(pool_factor * G * B)), min_pool)
    lam = G * B * p * k_admit
    N = int(G * B + pool + lam + 8 * np.sqrt(lam) + 16)
    rng = np.random.default_rng(cell_seed(seed, law.name, G, B, p, drift.name))
    s = law.sample(rng, N)
    o = rng.geometric(p, N).astype(np.int64)
    delta = np.ascontiguousarray(drift.sequence(k_admit + int(o.max()) + 4), dtype=np.float64)
    inc_seed = cell_seed(seed, "inc", law.name, G, B, p, drift.name)
    out = {}
    common = None
    for name, pol in (("fcfs", POLICY_FCFS), ("bf", bf_policy)):
        res = simulate_slots(G, B, s, o, k_admit, pol, drift.mode, delta, inc_seed,
                             drift.per_request_lo, drift.per_request_hi, law.s_max, pool, max_swaps)
        out[name] = res
        if common is None:
            common = res
    f, b = out["fcfs"], out["bf"]
    same = (f[0].shape == b[0].shape and np.array_equal(f[3], b[3])
            and np.allclose(f[0].sum(axis=1), b[0].sum(axis=1), rtol=1e-12, atol=1e-6))
    return SlotRun(G=G, B=B, p=p, law=law, drift=drift, burn_in=burn, k_admit=k_admit,
                   n_batches=n_batches, loads={"fcfs": f[0], "bf": b[0]}, sum_y=f[1], sum_y2=f[2],
                   active=f[3], certified=b[4], swaps=b[5], margin=f[6], same_active=bool(same),
                   certified_fcfs=f[4])
