"""The library's error messages in the command line's words.

:func:`bfio.simulator.simulate` and the models it builds name what is wrong by
their Python names (``prefill.kv_tokens``, ``dispatch='instant'``,
``simulate(prefill=bfio.engine.prefill.PrefillModel(...))``), which is right for a
library caller and useless at a prompt. :func:`cli_words` rewrites those names
into the flags of ``bfio simulate`` that set them; ``bfio simulate`` passes
every :class:`~bfio.ground.errors.ConfigError` of a run through it.
"""

from __future__ import annotations

import re

from bfio.policies.base import REQUIREMENTS
from bfio.engine.run_parameters import library_keys
from bfio.step_model import OPTIONS as STEP_MODEL_OPTIONS

#: A library key at the head of a message (``"<key>: ..."``) -> the flag that sets it: the
#: declared run parameters' (:func:`bfio.engine.run_parameters.library_keys`) and step-model
#: options' (:data:`bfio.step_model.OPTIONS`, ``step_model.gpu``), then the others'.
FLAGS = {
    **{key: o.flag for key, o in library_keys().items()},
    **{o.name if o.name == "step_model" else f"step_model.{o.name}": o.flag for o in STEP_MODEL_OPTIONS},
    "workers": "--workers",
    "dispatch": "--dispatch",
    "queue_moves": "--queue-moves",
    "rank_pause": "--rank-pause",
    "rank_pause_options": "--rank-pause-option",
    "migration": "--migration",
    "migration_options": "--migration-option",
    "policy": "--policy",
}

#: What a policy needs (:data:`bfio.policies.base.REQUIREMENTS`), as the command line provides it.
NEEDS = {
    "prefill": "the prefill step model (--prefill-chunk-tokens N; --prefill-token-s, --prefix-cache-blocks "
               "and --kv-tokens turn it on too)",
    "blocks": "prompt block hashes in the trace (a trace with a hash column, such as mooncake)",
}


def cli_words(message: str) -> str:
    """``message`` with the library's names of ``bfio simulate``'s inputs replaced by
    the flags that set them (:data:`FLAGS`, :data:`NEEDS`, ``dispatch='x'`` ->
    ``--dispatch x``); a message that names none is returned as it is."""
    for need, words in NEEDS.items():
        message = message.replace(REQUIREMENTS[need], words)
    head, sep, rest = message.partition(": ")
    if sep and head in FLAGS:
        message = f"{FLAGS[head]}: {rest}"
    return re.sub(r"\bdispatch='(\w+)'", r"--dispatch \1", message)


__all__ = ["FLAGS", "NEEDS", "cli_words"]
