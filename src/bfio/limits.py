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
#: Requests of one run (workload draw, ``--requests``, any config key ``requests``):
#: the simulator keeps about 15 arrays of 8 bytes per request, so 2^27 requests
#: are about 16 GB, within this project's machines (24 GiB).
MAX_REQUESTS = 2 ** 27
#: Arrival times, in seconds after the first arrival (traces, Poisson draws,
#: ``time_scale``): at 10^9 s (31.7 years) a float64 clock still resolves
#: 0.1 microseconds, far below a decode step; beyond it latencies lose digits.
MAX_ARRIVAL_S = 1e9
#: The noisy predictor's ``d_hi``: an estimate at most ``(1 + d_hi) o`` (101 times
#: the true length) keeps ``o_hat`` far inside ``int64`` and the lookahead meaningful.
MAX_NOISE_HIGH = 100.0
#: A window shorter than this many steps is flagged in ``SimulationResult.warnings``.
MIN_WINDOW_STEPS = 10

__all__ = ["MAX_PREFILL", "MAX_DECODE", "MAX_SLOTS", "MAX_REQUESTS", "MAX_ARRIVAL_S", "MAX_NOISE_HIGH", "MIN_WINDOW_STEPS"]
