"""Deprecated alias of :mod:`bfio.traces.sources` (moved in issue 28; this alias goes in a later release).

``import bfio.trace_sources`` warns once and hands back the module itself, so every
name (and every monkeypatch) is the same object as in :mod:`bfio.traces.sources`.
"""

import sys
import warnings

from bfio.traces import sources as _moved

warnings.warn("bfio.trace_sources is deprecated: import bfio.traces.sources instead", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
