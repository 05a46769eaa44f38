"""The ground floor: what every other layer reads and which reads no other layer.

Constants and bounds (:mod:`~bfio.ground.constants`, :mod:`~bfio.ground.limits`,
:mod:`~bfio.ground.errors`, :mod:`~bfio.ground.arrival_modes`), the formulas each
written once (:mod:`~bfio.ground.metrics`, :mod:`~bfio.ground.power`,
:mod:`~bfio.ground.imbalance_share`, :mod:`~bfio.ground.student_t`), the
declaration of an option (:mod:`~bfio.ground.options`) and the machinery under
the kernels and the outputs (:mod:`~bfio.ground.jit`,
:mod:`~bfio.ground.kernel_cache`, :mod:`~bfio.ground.progress`,
:mod:`~bfio.ground.results_io`, :mod:`~bfio.ground.plugins`).
``docs/architecture.md`` draws the layers.
"""
