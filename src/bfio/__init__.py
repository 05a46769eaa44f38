"""bfio: Balance-Future with Integer Optimization (BF-IO) for barrier-synchronized
data-parallel decode.

Reference implementation of "A Universal Load Balancing Principle and Its
Application to Large Language Model Serving". The package reads like the paper:

- :mod:`bfio.ground.constants`  time and power constants of Section 6 / Appendix D
- :mod:`bfio.ground.power`      the power model, Eq. (power-law), and energy accounting
- :mod:`bfio.workloads.workload`   request workloads ``(s_i, o_i)`` and drawing N requests
- :mod:`bfio.traces`     reading and validating request traces (known ones: :mod:`bfio.traces.registry`)
- :mod:`bfio.policies`   routing policies (FCFS, JSQ, ..., BF-IO) behind a registry
- :mod:`bfio.simulator`  the step loop of barrier-synchronized workers (Section 3)
- :mod:`bfio.ground.metrics`    AvgImbalance, throughput, TPOT, energy (Section 6.3)
"""

__all__ = ["PaperConstants", "Workload", "draw_workload", "simulate", "SimulationResult"]
__version__ = "0.1.0"

_LAZY = {"PaperConstants": "bfio.ground.constants", "Workload": "bfio.workloads.workload", "draw_workload": "bfio.workloads.workload",
         "simulate": "bfio.simulator", "SimulationResult": "bfio.engine.simulation_result"}


def __getattr__(name):
    # Lazy so that ``import bfio.theory`` or a plotting script does not pay for
    # the simulator's imports (numba, pandas) it never uses.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bfio' has no attribute {name!r}")
