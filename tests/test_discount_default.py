"""The discount's default, ``delta = 1`` (Eq. (IO) as printed), is written once:
:data:`bfio.solvers.objective.UNDISCOUNTED`, which every default of the solver
layer and the paper-literal objective name (issue 28); the discount is checked
where it enters (an instance, an instance file, the objective's terms, a
policy option)."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

from bfio.ground.errors import ConfigError
from bfio.solvers.instance import Instance, InstanceError, instance_from_state, load_instance
from bfio.solvers.objective import ObjectiveTerms
from bfio.lookahead.discount import OBJECTIVES, UNDISCOUNTED, offset_weights


def test_every_default_discount_is_the_constant():
    assert UNDISCOUNTED == 1.0 and OBJECTIVES["paper-literal"]["discount"] is UNDISCOUNTED
    for fn in (Instance, instance_from_state, offset_weights, ObjectiveTerms.build):
        assert inspect.signature(fn).parameters["discount"].default is UNDISCOUNTED, fn
    inst = Instance(base=np.zeros((2, 3)), free=[1, 1], sizes=[5], ages=[0])
    assert inst.discount == UNDISCOUNTED and np.array_equal(inst.weights, np.ones(3))


def _instance_file(tmp_path, **changes):
    data = Instance(base=np.zeros((2, 3)), free=[1, 1], sizes=[5], ages=[0], discount=0.5).to_dict()
    data.update(changes)
    path = tmp_path / "inst.json"
    path.write_text(json.dumps({k: v for k, v in data.items() if v is not None}))
    return path


def test_instance_files_default_and_check_the_discount(tmp_path):
    assert load_instance(_instance_file(tmp_path)).discount == 0.5
    assert load_instance(_instance_file(tmp_path, discount=None)).discount == UNDISCOUNTED  # files before delta
    for bad in (0, 1.5, "x"):
        with pytest.raises(InstanceError, match=r"inst\.json, field 'discount': discount: expected a number"):
            load_instance(_instance_file(tmp_path, discount=bad))


@pytest.mark.parametrize("make", [
    lambda d: Instance(base=np.zeros((1, 2)), free=[1], sizes=[1], ages=[0], discount=d),
    lambda d: ObjectiveTerms.build(3, d),
], ids=["Instance", "ObjectiveTerms.build"])
def test_public_entries_check_the_discount(make):
    for bad in (0, 1.5, float("nan"), True):
        with pytest.raises(ConfigError, match="discount"):
            make(bad)


def test_a_policy_resolves_its_discount_as_before():
    from bfio.policies import make_policy

    assert make_policy("bfio", horizon=4).discount == OBJECTIVES["default"]["discount"]
    literal = make_policy("bfio", horizon=4, objective="paper-literal")
    assert literal.discount == UNDISCOUNTED and isinstance(literal.discount, float)
    given = make_policy("bfio", horizon=4, discount=1)
    assert given.discount == 1.0 and isinstance(given.describe()["discount"], float)
    for bad in (0, 1.2, "x"):
        with pytest.raises(ConfigError, match="discount"):
            make_policy("bfio", horizon=4, discount=bad)
