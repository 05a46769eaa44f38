"""The public kernel profiles the calibrated step model is fitted to (issue 44):
``vidur-profiles/`` of the data directory (``../shared/data/README.md``, section
"vidur-profiles/": microsoft/vidur ``data/profiling/``, MIT). Each file is
registered here with its pinned size and sha256, read from the data directory as
the traces are (:func:`bfio.traces.registry.default_data_dir`), never copied into
the repository. A missing file, or one that is not the pinned one, is a
:class:`~bfio.ground.errors.ProfileError` naming it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bfio.ground.errors import ProfileError
from bfio.traces.registry import default_data_dir, sha256_of

PROFILE_DIR = "vidur-profiles"
#: where the files come from (README of the data directory)
PROFILE_SOURCE = "microsoft/vidur data/profiling/ (MIT): attention @ e2d00e9, mlp and all_reduce @ 7d47513"


@dataclass(frozen=True)
class ProfileFile:
    """One pinned profile file: its name under :data:`PROFILE_DIR`, sha256, bytes, data rows."""

    name: str
    sha256: str
    size: int
    rows: int

    @property
    def relpath(self) -> str:
        return f"{PROFILE_DIR}/{self.name}"


PROFILE_FILES: dict[str, ProfileFile] = {f.name: f for f in [
    ProfileFile("a100_CodeLlama-34b-Instruct-hf_mlp.csv",
                "9ba6058c55b7c291ccdf9cd445655de93d3a3dfc0fdd8b08f654170413906dce", 692374, 1044),
    ProfileFile("a100_Llama-2-70b-hf_mlp.csv",
                "d690ce601f94ab80586e1d5a6a92ea0d64114dc3e0895bf32b3bee270f3d9b7f", 688286, 1044),
    ProfileFile("a100_Llama-2-7b-hf_mlp.csv",
                "2cfacca979f32e83257753cf6fd815a71af8ba9a7a9d0643b18d9f54e8a37688", 706614, 1044),
    ProfileFile("a100_attention_e8192_q64_kv8_tp2.csv",
                "83f4bb3ac779878b98457d1e596b324206c6c39d8bf4b25f35a1f14ccbd8af24", 3021220, 14658),
    ProfileFile("a100_dgx_all_reduce.csv",
                "5ea3f3c229fee1ef70ea308881fff420d60ab6f30e86edda1ed6146b12eb28ef", 645190, 6958),
    ProfileFile("h100_CodeLlama-34b-Instruct-hf_mlp.csv",
                "f5ddfd2ab5a8342c34866f53214a4a4f8f535369c29159da0be2d524bcaf00a5", 693809, 1044),
    ProfileFile("h100_Llama-2-70b-hf_mlp.csv",
                "fb3581ade7c02caab8a0f7d1ca1ad06a7b0fbac3d9f32a9ed46ae55d95fd6bb3", 691493, 1044),
    ProfileFile("h100_Llama-2-7b-hf_mlp.csv",
                "b1a2def08857d10e5f66c3b5b2d046b6e8caed5c30b2bc920a0462598e3b2a59", 715469, 1044),
    ProfileFile("h100_dgx_all_reduce.csv",
                "7bc107da2ca2790ab5aa6585eba71603bf7359dd7e7cba1b586f885cae8bcb81", 274142, 2982),
]}

ATTENTION_FILE = "a100_attention_e8192_q64_kv8_tp2.csv"


def mlp_file(gpu: str, model: str) -> str:
    return f"{gpu}_{model}_mlp.csv"


def all_reduce_file(gpu: str) -> str:
    return f"{gpu}_dgx_all_reduce.csv"


def data_root(data_dir=None) -> Path:
    return Path(data_dir) if data_dir is not None else default_data_dir()


def profile_path(name: str, data_dir=None, verify: bool = True) -> Path:
    """The verified path of registered profile file ``name`` under ``data_dir``
    (default: the traces' data directory). Missing, not a regular file, not the
    pinned size or sha256: a :class:`ProfileError` naming the file."""
    spec = PROFILE_FILES.get(name)
    if spec is None:
        raise ProfileError(name, f"not a registered profile file (known: {', '.join(sorted(PROFILE_FILES))})")
    path = data_root(data_dir) / spec.relpath
    if not path.exists():
        raise ProfileError(path, f"missing: the calibrated step model reads {spec.relpath} from the data directory "
                                 f"($BFIO_DATA_DIR or ../shared/data; {PROFILE_SOURCE}, sha256 {spec.sha256})")
    if not path.is_file():
        raise ProfileError(path, "is not a regular file")
    if verify:
        size = os.stat(path).st_size
        if size != spec.size:
            raise ProfileError(path, f"size is {size:,} bytes, expected the pinned {spec.size:,} (sha256 "
                                     f"{spec.sha256}); the file is not the pinned profile")
        actual = sha256_of(path)
        if actual != spec.sha256:
            raise ProfileError(path, f"sha256 is {actual}, expected the pinned {spec.sha256}; the file is not "
                                     "the pinned profile")
    return path


def read_profile(name: str, data_dir=None, verify: bool = True):
    """Profile file ``name`` as a pandas frame (:func:`profile_path` first)."""
    import pandas as pd

    return pd.read_csv(profile_path(name, data_dir, verify))
