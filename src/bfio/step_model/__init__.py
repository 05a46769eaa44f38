"""Step models: how long one step of the step loop lasts (issue 44,
``docs/step_model.md``).

:data:`STEP_MODELS` is the single source of their names:

- ``paper`` (the default): ``dt = C + t_l max_g L_g`` (``+ token_s max_g P_g``
  with prefill), Section 6.2 and Appendix D (:class:`bfio.ground.constants.PaperConstants`);
- ``calibrated``: an engine-specific step,
  ``dt = max_g [alpha + a_kv L_g + a_n n_g + a_p P_g + a_p2 P_g^2] + beta max_g n_g + comm``,
  its coefficients fitted per GPU and model to public kernel profiles
  (:mod:`bfio.step_model.fit`, :mod:`bfio.step_model.profiles`); ``beta``, the
  batch term padded to the largest rank (CUDA graphs, SGLang's
  ``DpPaddingMode.MAX_LEN``), may be set (0 .. a MoE-like value).

:data:`BARRIERS`: ``lockstep`` (MoE with expert parallelism and DP attention:
the paper's setting, every rank waits for the slowest) and ``independent``
(dense vLLM DP: each rank its own clock, :class:`bfio.sim.engine.IndependentEngine`;
with the prefill model :class:`bfio.sim.engine.IndependentPrefillEngine`).

The power model is the paper's, ``P(u)`` per rank times the step's ``dt``, on
the calibrated ``dt`` too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from bfio.ground.errors import ConfigError
from bfio.ground.options import Option
from bfio.step_model.fit import GPUS, MODELS, StepCoefficients, step_coefficients

#: the step models, by name (the single source: CLI choices, schema, checks)
STEP_MODELS = ("paper", "calibrated")
#: barrier modes of a deployment
BARRIERS = ("lockstep", "independent")
DEFAULT_GPU = "a100"
DEFAULT_MODEL = "Llama-2-7b-hf"

#: the step model's options, each declared once: the CLI flags, the config schema
#: and :class:`StepModel`'s checks are derived from them
OPTIONS = (
    Option("step_model", str, "paper", "step time model: paper (C + t_l max L, Section 6.2) or calibrated "
           "(fitted to public kernel profiles, docs/step_model.md)", choices=STEP_MODELS),
    Option("gpu", str, DEFAULT_GPU, "with --step-model calibrated: the GPU of the profiles", choices=tuple(GPUS),
           applies_with=("step_model", ("calibrated",))),
    Option("model", str, DEFAULT_MODEL, "with --step-model calibrated: the model of the profiles",
           choices=tuple(MODELS), applies_with=("step_model", ("calibrated",))),
    Option("beta", float, None, "with --step-model calibrated: seconds per request of the batch padded to the "
           "largest rank's (0: no padding; larger: MoE-like)", minimum=0.0, maximum=1.0,
           derived="the fitted value of --gpu and --model", applies_with=("step_model", ("calibrated",)),
           metavar="S"),
    Option("barrier", str, "lockstep", "with --step-model calibrated: lockstep (MoE with EP and DP attention, the "
           "paper's setting) or independent (dense DP, each rank its own clock)",
           choices=BARRIERS, applies_with=("step_model", ("calibrated",))),
)
OPTION = {o.name: o for o in OPTIONS}


@dataclass(frozen=True)
class StepModel:
    """A run's step model (module docstring). ``beta=None``: the fitted value."""

    step_model: str = "paper"
    gpu: str = DEFAULT_GPU
    model: str = DEFAULT_MODEL
    beta: float | None = None
    barrier: str = "lockstep"

    def __post_init__(self):
        for o in OPTIONS:
            object.__setattr__(self, o.name, o.check(getattr(self, o.name)))
        if self.step_model == "paper":
            changed = [o.name for o in OPTIONS[1:] if getattr(self, o.name) != o.default]
            if changed:
                raise ConfigError(f"step_model.{changed[0]}: only valid with step_model 'calibrated' (the paper's "
                                  "step time has no GPU, model, beta or barrier)")

    @property
    def is_paper(self) -> bool:
        return self.step_model == "paper"

    def coefficients(self, data_dir=None, verify: bool = True) -> StepCoefficients:
        """The calibrated coefficients (:func:`bfio.step_model.fit.step_coefficients`),
        ``beta`` replaced when set."""
        if self.is_paper:
            raise ConfigError("step_model: the paper's step time has no calibrated coefficients")
        c = step_coefficients(self.gpu, self.model, data_dir, verify)
        if self.beta is not None:
            c = StepCoefficients(**{**c.to_dict(), "beta": float(self.beta)})
        return c

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_items(cls, items) -> "StepModel":
        """From ``(name, value)`` pairs (a :class:`bfio.runs.run.RunSpec`'s); empty: the paper's."""
        d = dict(items)
        unknown = sorted(set(d) - set(OPTION))
        if unknown:
            raise ConfigError(f"step_model.{unknown[0]}: not a step-model option (its options: {', '.join(OPTION)})")
        return cls(**d)


def schema() -> dict:
    """The config schema of a ``step_model`` section (properties from :data:`OPTIONS`;
    empty: the paper's step)."""
    return {"type": "object", "additionalProperties": False, "default": {},
            "description": "the step model of every run (bfio.step_model, docs/step_model.md; empty: the paper's)",
            "properties": {o.name: o.schema() for o in OPTIONS}}


def from_config(section: dict | None, key: str) -> tuple:
    """A config section's step model as a :class:`bfio.runs.run.RunSpec`'s ``step_model``
    (sorted pairs of the values given, ``step_model: paper`` dropped); checked by
    :class:`StepModel`, the error naming config key ``key``."""
    given = dict(section or {})
    try:
        StepModel(**given)
    except ConfigError as e:
        raise ConfigError(f"config key '{key}.{str(e).split(': ', 1)[0].split('.')[-1]}': "
                          f"{str(e).split(': ', 1)[1]}") from None
    except TypeError:
        unknown = sorted(set(given) - set(OPTION))
        raise ConfigError(f"config key '{key}.{unknown[0]}': not a step-model option "
                          f"(its options: {', '.join(OPTION)})") from None
    if given.get("step_model") == "paper":
        del given["step_model"]
    return tuple(sorted(given.items()))


__all__ = ["STEP_MODELS", "BARRIERS", "OPTIONS", "StepModel", "StepCoefficients",
           "step_coefficients", "GPUS", "MODELS", "schema", "from_config"]
