"""Documented upper bounds on simulation inputs (issue 12, item 3).

The simulator keeps token counts and worker loads in ``int64`` and the metrics
in ``float64``. A worker's load is ``L_g = sum_{i in A_g} (s_i + tau_i)`` with at
most ``B`` active requests, and the metrics form ``G * max_g L_g - sum_g L_g``.
The bounds below keep every such quantity at most

    G * B * (MAX_PREFILL + MAX_DECODE) <= 2^21 * (2^31 + 2^24) < 2^53,

so loads and imbalances are exact in ``float64`` and ten bits below ``int64``
overflow (``2^63``). They are far above any real deployment:

* ``MAX_PREFILL = 2^31`` tokens (2.1 billion; today's longest contexts are
  ~10^7 tokens);
* ``MAX_DECODE = 2^24`` tokens (16.8 million generated tokens; a request is
  active for ``o_i`` steps, so this also bounds the run length per request);
* ``MAX_SLOTS = G * B <= 2^21`` (2,097,152 slots, e.g. 29,127 workers of 72
  slots; the paper's largest cluster has 256 x 72 = 18,432). The simulator keeps
  ``G x B`` slot arrays and the metrics average over ``G``: a larger cluster is
  rejected up front instead of running for minutes to NaN.

Values beyond the bounds are rejected with a message naming the file, row and
column (traces), the argument (workloads, CLI) or the key (config).
"""

from __future__ import annotations

MAX_PREFILL = 2 ** 31
MAX_DECODE = 2 ** 24
MAX_SLOTS = 2 ** 21
#: Memory a run may need at its bound, in bytes: 16 GiB, leaving a third of this
#: project's machines (24 GiB) to the interpreter, the libraries (about 0.24 GiB
#: measured) and the operating system.
MEMORY_BUDGET = 16 * 2 ** 30
#: Peak memory per request of a simulation, in bytes, rounded up from the
#: measurement (issue 41, item 2): ``/usr/bin/time -v bfio simulate`` on a
#: 1000-row trace at 1M, 2M and 4M requests (G = 1000, B = 72) grows by 248 bytes a
#: request (backlog, central dispatch; the result tables included) and 254 bytes
#: (Poisson arrivals, instant dispatch, the prefill model), linear in N on a base
#: of 0.24 GiB. A cluster's ``G x B`` slot arrays cost about 10 bytes a slot (20 MB
#: at :data:`MAX_SLOTS`), negligible beside it.
BYTES_PER_REQUEST = 256
#: Integer sizes of the prefill model (issue 41, item 4): a rank's prefill chunk
#: per step (``--prefill-chunk-tokens``, ``prefill.chunk_tokens``), its KV memory
#: (``--kv-tokens``, ``kv_tokens_per_rank``) and its prefix cache in blocks
#: (``--prefix-cache-blocks``). A rank holds at most ``B <= MAX_SLOTS`` requests of
#: at most ``MAX_PREFILL + MAX_DECODE`` tokens, so a larger value means nothing
#: more; this one, ``2^52 + 2^45``, keeps every sum of them exact in float64
#: (``< 2^53``) and far from int64 overflow in the step kernels.
MAX_RANK_TOKENS = MAX_SLOTS * (MAX_PREFILL + MAX_DECODE)
#: Seconds per computed prompt token on a rank (``--prefill-token-s``,
#: ``prefix_study.prefill.token_s``; issue 41, item 10): 10^4 times the default
#: (1e-4 s, a 7B model on an A100). Slower hardware is not meaningful, and a
#: step's prefill then takes at most :data:`MAX_RANK_TOKENS` s (< 2^53), so the
#: clock, energy and throughput stay finite (``1e300`` gave an infinite energy).
MAX_TOKEN_S = 1.0
#: Requests of one run (workload draw, ``--requests``, any config key ``requests``),
#: refused above this before anything is allocated: 2^26 requests (67,108,864) take
#: at most ``2^26 * 256`` bytes = 16 GiB (:data:`MEMORY_BUDGET`), plus 0.24 GiB of
#: base. (2^27 requests, the bound before, need about 32 GiB and died of a
#: MemoryError on a 24 GiB machine.)
MAX_REQUESTS = MEMORY_BUDGET // BYTES_PER_REQUEST
#: Peak memory per prompt block hash of a generated workload, in bytes, rounded up
#: from the measurement (issue 41, item 3): ``tracemalloc`` peaks of
#: :func:`bfio.workloads.sessions.session_requests` (one array per request, then joined and
#: reordered) at 32M and 64M hashes are 41 bytes a hash, of
#: :func:`bfio.workloads.sessions.grpo_groups` at 10M and 20M hashes 25 bytes; the run then
#: keeps 8 bytes a hash.
BYTES_PER_HASH = 48
#: Block hashes of one generated workload, counted from the sizes before any is
#: made: 357,913,941 (16 GiB, :data:`MEMORY_BUDGET`, at 48 bytes a hash). With
#: requests the bound is on the sum, :func:`memory_estimate`.
MAX_BLOCK_HASHES = MEMORY_BUDGET // BYTES_PER_HASH
#: Arrival times, in seconds after the first arrival (traces, Poisson draws,
#: ``time_scale``): at 10^9 s (31.7 years) a float64 clock still resolves
#: 0.1 microseconds, far below a decode step; beyond it latencies lose digits.
MAX_ARRIVAL_S = 1e9
#: The noisy predictor's ``d_hi``: an estimate at most ``(1 + d_hi) o`` (101 times
#: the true length) keeps ``o_hat`` far inside ``int64`` and the lookahead meaningful.
MAX_NOISE_HIGH = 100.0
#: A window shorter than this many steps is flagged in ``SimulationResult.warnings``.
MIN_WINDOW_STEPS = 10


def memory_estimate(requests: int, hashes: int = 0) -> int:
    """Bytes a run of ``requests`` requests with ``hashes`` prompt block hashes
    needs at its peak (:data:`BYTES_PER_REQUEST`, :data:`BYTES_PER_HASH`), beyond
    the interpreter's 0.24 GiB; at most :data:`MEMORY_BUDGET` for an accepted run."""
    return int(requests) * BYTES_PER_REQUEST + int(hashes) * BYTES_PER_HASH


__all__ = ["MAX_PREFILL", "MAX_DECODE", "MAX_SLOTS", "MEMORY_BUDGET", "BYTES_PER_REQUEST", "MAX_RANK_TOKENS",
           "MAX_TOKEN_S", "MAX_REQUESTS", "BYTES_PER_HASH", "MAX_BLOCK_HASHES", "MAX_ARRIVAL_S", "MAX_NOISE_HIGH",
           "MIN_WINDOW_STEPS", "memory_estimate"]
