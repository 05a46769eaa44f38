"""Routing policies behind a registry by name.

``make_policy("jsq_tokens")`` builds a policy; ``register`` adds one (the BF-IO
router registers itself as ``bfio``). Baselines pick from the pool oldest first
(``../shared/spec/semantics.md``, "Baseline policies"). Production baselines
with instant dispatch (``vllm_dp``, ``least_tokens``, and the instant variants of
``jsq_requests``, ``round_robin``, ``power_of_two``, ``random``) are described in
``docs/online.md``.
"""

from __future__ import annotations

from bfio.errors import ConfigError
from bfio.policies.base import DispatchState, Policy, RoutingState

_REGISTRY: dict[str, type[Policy]] = {}


def register(cls: type[Policy]) -> type[Policy]:
    _REGISTRY[cls.name] = cls
    return cls


def available() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def make_policy(name: str, seed: int = 0, **options) -> Policy:
    """Instantiate the policy registered as ``name`` with its options."""
    _load_builtin()
    if name not in _REGISTRY:
        raise ConfigError(f"policy: unknown policy '{name}' (available: {', '.join(sorted(_REGISTRY))})")
    return _REGISTRY[name](seed=seed, **options)


def _load_builtin() -> None:
    # Imported lazily so each policy module registers itself exactly once.
    from bfio.policies import fcfs, jsq, round_robin, random_choice, power_of_two  # noqa: F401
    from bfio.policies import vllm_dp, least_tokens, bfio  # noqa: F401


__all__ = ["DispatchState", "Policy", "RoutingState", "register", "available", "make_policy"]
