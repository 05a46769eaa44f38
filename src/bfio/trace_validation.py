"""Deprecated alias of :mod:`bfio.traces.validation` (moved in issue 28; this alias goes in a later release).

``import bfio.trace_validation`` warns once and hands back the module itself, so every
name (and every monkeypatch) is the same object as in :mod:`bfio.traces.validation`.
"""

import sys
import warnings

from bfio.traces import validation as _moved

warnings.warn("bfio.trace_validation is deprecated: import bfio.traces.validation instead", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
