"""bfio: Balance-Future with Integer Optimization (BF-IO) for barrier-synchronized
data-parallel decode.

Reference implementation of "A Universal Load Balancing Principle and Its
Application to Large Language Model Serving". The package reads like the paper:

- :mod:`bfio.constants`  time and power constants of Section 6 / Appendix D
- :mod:`bfio.power`      the power model, Eq. (power-law), and energy accounting
- :mod:`bfio.workload`   request workloads ``(s_i, o_i)`` and drawing N requests
- :mod:`bfio.traces`     reading and validating request traces
- :mod:`bfio.policies`   routing policies (FCFS, JSQ, ..., BF-IO) behind a registry
- :mod:`bfio.simulator`  the step loop of barrier-synchronized workers (Section 3)
- :mod:`bfio.metrics`    AvgImbalance, throughput, TPOT, energy (Section 6.3)
"""

from bfio.constants import PaperConstants
from bfio.workload import Workload, draw_workload
from bfio.simulator import simulate, SimulationResult

__all__ = ["PaperConstants", "Workload", "draw_workload", "simulate", "SimulationResult"]
__version__ = "0.1.0"
