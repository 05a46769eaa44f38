"""Where oracle-free instant BF-IO loses p99 end-to-end latency to the best router
on LongBench (issue 44's 1% criterion; not a test): ``benchmarks/instant_gap.py``
with diagnostic rows that mix the oracle into the oracle-free predictor, one
piece of information at a time.

    python benchmarks/instant_tail.py run OUT_DIR [instant_gap.py run's options]
    python benchmarks/instant_tail.py table OUT_DIR [--seeds ...]

The diagnostic predictors are registered in this process only (they read true
decode lengths; no study may use them):

- ``ps_new_oracle``: the running requests' expected loads of ``prompt_survival``,
  every new request's lifetime its true decode length (``gives_lifetimes``):
  what knowing the arrivals' lengths is worth;
- the oracle with ``new_requests: persist`` (an existing option): what knowing the
  running requests' remaining lengths is worth, without the arrivals'.

Rows ``none``, ``empirical``, H = 0 (oracle) beside them. Measured on seeds 100-109
(``docs/online.md``, "Why oracle-free instant BF-IO lost p99"): the arrivals' lengths
add nothing measurable; the loss was the reading of a full worker's first slot
release, which option ``release: order`` (``instant_gap.py``'s ``*_order`` rows) fixes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import instant_gap  # noqa: E402

import bfio.predictors as predictors  # noqa: E402
from bfio.predictors.prompt_survival import PromptSurvivalPredictor  # noqa: E402


class PsNewOracle(PromptSurvivalPredictor):
    """``prompt_survival`` for the running requests, the true decode length as
    every new request's lifetime (diagnostic: reads the oracle)."""

    name = "ps_new_oracle"
    gives_lifetimes = True

    def expected_lengths(self, workload) -> np.ndarray:
        return np.asarray(workload.decode, dtype=np.int64)


DIAGNOSTIC = {"ps_new_oracle": PsNewOracle}

#: diagnostic rows (row -> options, as instant_gap.CANDIDATES)
ROWS = {
    "bfio_h40_instant_persist": {"policy": "bfio", "horizon": 40, "new_requests": "persist"},
    "bfio_h40_instant_none": {"policy": "bfio", "horizon": 40, "predictor": "none"},
    "bfio_h40_instant_emp": {"policy": "bfio", "horizon": 40, "predictor": "empirical"},
    "bfio_h40_instant_psnew": {"policy": "bfio", "horizon": 40, "predictor": "ps_new_oracle",
                               "new_requests": "predicted"},
    "bfio_h0_instant": {"policy": "bfio", "horizon": 0},
}


def register() -> None:
    """Add the diagnostic predictors to the registry of this process."""
    for name, cls in DIAGNOSTIC.items():
        predictors._FACTORIES[name] = lambda cls=cls, **_: cls()
    predictors.PREDICTORS = tuple(predictors._FACTORIES)
    instant_gap.CANDIDATES.update(ROWS)


if __name__ == "__main__":
    register()
    instant_gap.main(sys.argv[1:])
