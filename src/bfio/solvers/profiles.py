"""Deprecated alias of :mod:`bfio.profiles` (moved in issue 28 below both the
predictors and the solvers, which use it; this alias goes in a later release).

``import bfio.solvers.profiles`` warns once and hands back :mod:`bfio.profiles`
itself, so :func:`predicted_loads` and :func:`expected_loads` are the same objects.
"""

import sys
import warnings

from bfio import profiles as _moved

warnings.warn("bfio.solvers.profiles is deprecated: import bfio.profiles instead", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
