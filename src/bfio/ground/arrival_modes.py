"""How requests arrive and how they enter the simulator (``docs/architecture.md``, glossary).

Named here, below the run parameters that declare ``--arrival-mode`` and the
workloads that draw arrival times, so both read one list.
"""

from __future__ import annotations

from bfio.ground.errors import ConfigError

#: How requests arrive (CLI ``--arrival-mode``, the studies' ``arrival.mode``):
#: ``backlog`` (the paper's: no arrival times, a pool of ``4 G``), ``poisson``
#: (drawn as in backlog, Poisson arrival times), ``trace`` (the trace's own
#: timestamps).
ARRIVAL_MODES = ("backlog", "poisson", "trace")
#: How requests enter the simulator (:func:`bfio.simulator.simulate`'s ``entry``).
ENTRY_MODES = ("backlog", "arrivals")


def entry_mode(arrival_mode: str) -> str:
    """The simulator's ``entry`` for an arrival mode: ``backlog`` stays, timed
    arrivals (``poisson``, ``trace``) enter at their arrival times."""
    if arrival_mode not in ARRIVAL_MODES:
        raise ConfigError(f"arrival mode: expected one of {', '.join(ARRIVAL_MODES)}, got {arrival_mode!r}")
    return "backlog" if arrival_mode == "backlog" else "arrivals"
