"""Deprecated alias of :mod:`bfio.traces.registry` (moved in issue 28; this alias goes in a later release).

``import bfio.trace_registry`` warns once and hands back the module itself, so every
name (and every monkeypatch) is the same object as in :mod:`bfio.traces.registry`.
"""

import sys
import warnings

from bfio.traces import registry as _moved

warnings.warn("bfio.trace_registry is deprecated: import bfio.traces.registry instead", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
