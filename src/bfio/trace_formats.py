"""Deprecated alias of :mod:`bfio.traces.formats` (moved in issue 28; this alias goes in a later release).

``import bfio.trace_formats`` warns once and hands back the module itself, so every
name (and every monkeypatch) is the same object as in :mod:`bfio.traces.formats`.
"""

import sys
import warnings

from bfio.traces import formats as _moved

warnings.warn("bfio.trace_formats is deprecated: import bfio.traces.formats instead", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
