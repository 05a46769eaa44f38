"""The simulator as parts (issue 43): the step loop of Section 3 over a cluster
state, an entry strategy, a dispatch part and a step engine
(``docs/architecture.md``). :func:`simulate` is the public entry, also as
:func:`bfio.simulator.simulate`."""

from bfio.sim.loop import simulate

__all__ = ["simulate"]
