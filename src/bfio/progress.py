"""Progress bars for long runs: quiet when ``CI`` is set or stderr is not a terminal."""

from __future__ import annotations

import importlib.util
import os
import sys

# tqdm.auto picks the notebook widget bar, which needs ipywidgets (else it
# warns "IProgress not found"): use it only when ipywidgets is importable.
if importlib.util.find_spec("ipywidgets") is not None:
    from tqdm.auto import tqdm
else:
    from tqdm.std import tqdm


def progress_enabled() -> bool:
    return not os.environ.get("CI") and sys.stderr.isatty()


def progress(total=None, desc: str = "", enabled: bool | None = None, **kwargs):
    """A tqdm bar, disabled unless :func:`progress_enabled` (or ``enabled=True``)."""
    on = progress_enabled() if enabled is None else enabled
    return tqdm(total=total, desc=desc, disable=not on, leave=False, **kwargs)
