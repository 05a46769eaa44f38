"""The screen of BF-IO's migration rule (issue 45, :class:`bfio.sim.migration.BfioMigration`),
as numba kernels: which running requests it reads, the slack a transfer's floor takes off
(:meth:`bfio.sim.migration_kv.KvWay.transfer_slack`), and with ``kv: transfer`` and no
prefill model their cost floors and whether each may pay. The rule's Python around
them is :meth:`bfio.sim.migration.BfioMigration.candidates`; the screen runs at every
routing call of a run with transfers (every step), so each phase is one kernel call."""

from __future__ import annotations

import numpy as np

from bfio.ground.jit import kernel

#: :func:`screened`'s empty arrays: no queue moves / no pause rule
NONE = np.zeros(0, dtype=np.int64)


@kernel
def screened(slot_request, times, moved_in, calls, paused, prefill, generated):
    """The running requests BF-IO's migration screen reads (:meth:`BfioMigration.candidates`)
    and their sizes ``s_i + tau_i`` (floats): in slot order, rank by rank, those that
    have not migrated (``times[i] == 0``), that the queue moves did not move in this
    routing call (``moved_in[i] != calls``; ``moved_in`` empty: no queue moves) and that
    were never paused (``paused[i] == 0``; empty: no pause rule), as
    :meth:`Migration.eligible` reads them. Invariant: the ids are ``slot_request``'s
    entries >= 0 in row-major order, filtered."""
    G, B = slot_request.shape
    ids = np.empty(G * B, dtype=np.int64)
    sizes = np.empty(G * B)
    n = 0
    for g in range(G):
        for b in range(B):
            i = slot_request[g, b]
            if i < 0 or times[i] != 0:
                continue
            if moved_in.shape[0] and moved_in[i] == calls:
                continue
            if paused.shape[0] and paused[i] != 0:
                continue
            ids[n] = i
            sizes[n] = float(prefill[i] + generated[i])
            n += 1
    return ids[:n], sizes[:n]


@kernel
def transfer_screen(ids, sizes, bytes_per_token, bytes_per_s, slack, scale, t_l, workers, s0, s1, floors, out):
    """:meth:`BfioMigration.candidates` with ``kv: transfer`` and no prefill model, request
    by request (``ids``, their ``sizes`` ``s_i + tau_i``): the floor ``scale max(0, X_i -
    slack) / t_l`` (:meth:`BfioMigration.floor` of :meth:`bfio.sim.migration_kv.KvWay.transfer_floor`;
    ``scale`` the cost weight times ``G``, ``X_i = s_i + tau_i`` tokens' seconds,
    :meth:`bfio.sim.transfer.KvTransfer.seconds_of`; ``slack``:
    :meth:`bfio.sim.migration_kv.KvWay.transfer_slack`) into ``floors[i]``, and whether
    the bound ``G (size s0 + s1)`` (:meth:`bfio.policies.bfio.BFIO.migration_bound`,
    ``migration_sums``) exceeds it into ``out[i]``. Invariant: the floating-point
    operations of those methods, in their order (the same floats)."""
    for k in range(ids.shape[0]):
        size = sizes[k]
        x = size * bytes_per_token / bytes_per_s
        floor = scale * max(0.0, x - slack) / t_l
        floors[ids[k]] = floor
        out[ids[k]] = workers * (size * s0 + s1) > floor


@kernel
def slack_seconds(loads, tokens, offsets, pending, t_l):
    """``t_l (M - m) + spread + max_g pending_g`` (:meth:`bfio.sim.migration_kv.KvWay.transfer_slack`):
    ``M = max_g (L_g + q_g)`` the largest rank's load with its queued prompt tokens ``q_g``
    admitted, ``m = min_g L_g``, ``spread`` the range of the shares' parts beyond ``t_l L_g``
    (``offsets``, ``(3, G)``: :func:`bfio.sim.transfer.share_offsets`) and ``pending`` the ranks' pending transfers (seconds).
    Invariant: ``M - m`` in integers, then the floating-point sums in this order."""
    top = loads[0] + tokens[0]
    low = loads[0]
    for g in range(1, loads.shape[0]):
        top = max(top, loads[g] + tokens[g])
        low = min(low, loads[g])
    hi = offsets[0, 0]
    lo = offsets[0, 0]
    for r in range(offsets.shape[0]):
        for g in range(offsets.shape[1]):
            hi = max(hi, offsets[r, g])
            lo = min(lo, offsets[r, g])
    wait = pending[0]
    for g in range(1, pending.shape[0]):
        wait = max(wait, pending[g])
    return t_l * float(top - low) + (hi - lo) + wait
