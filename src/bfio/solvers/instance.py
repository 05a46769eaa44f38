"""One BF-IO routing problem: the integer program (IO) of Section 4 as data.

An :class:`Instance` holds what the integer program needs at one routing call
(``../shared/spec/semantics.md``, "BF-IO"):

- ``base[g, h]``: predicted load ``Lhat_g(h)`` of the requests already active on
  worker ``g`` at offset ``h = 0..H``;
- ``free[g]``: free slots ``cap_g``;
- ``sizes[j]``, ``ages[j]``: prefill ``s_j`` and steps waited of the waiting
  requests, oldest first;
- ``admission``: ``free`` (the IO as stated), ``fifo`` (the oldest ``U`` are
  admitted, only placement is optimized) or ``aging:N`` (requests that waited
  ``N`` or more steps are admitted first).

- ``lifetimes[j]`` (optional): a newly admitted request ``j`` adds ``s_j + h``
  while ``h < l_j``; without lifetimes every new request persists over the window;
- ``discount`` (``delta``, default :data:`~bfio.lookahead.discount.UNDISCOUNTED`, 1):
  the weight ``delta^h`` of offset ``h``.

Exactly ``U = min(|R_wait|, sum_g cap_g)`` requests are admitted, and the
objective is the discounted accumulated predicted imbalance
``J = sum_{h=0..H} delta^h [G max_g Lhat_g(h) - sum_g Lhat_g(h)]``, defined once
in :mod:`bfio.solvers.objective`. ``delta = 1`` without lifetimes is Eq. (IO)
as printed (``paper-literal``). The instance's discount and lifetimes are the
call's objective terms (:class:`~bfio.solvers.objective.ObjectiveTerms`):
:func:`instance_of_call` takes them from the routing policy's terms, and
:attr:`Instance.terms` gives them back over every offset ``0..H``, from which
the weights, the profiles and ``J`` are taken.

Instances are plain JSON (:func:`save_instance`, :func:`load_instance`) so any
routing call can be saved and re-solved by every backend
(``bfio solve --instance FILE --solver NAME``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bfio.lookahead.admission import parse_admission
from bfio.ground.constants import PaperConstants
from bfio.ground.errors import BfioError, ConfigError
from bfio.solvers.objective import ObjectiveTerms
from bfio.lookahead.discount import UNDISCOUNTED, check_discount
from bfio.lookahead.profiles import predicted_loads
from bfio.ground.results_io import atomic_path
from bfio.solvers import solve
from bfio.traces.formats import refuse_repeated_keys

FORMAT = "bfio-instance/1"


class InstanceError(BfioError, ValueError):
    """A saved instance file is missing, unreadable or malformed (names file and field)."""

    def __init__(self, path, message, field=None):
        self.path = str(path)
        self.field = field
        where = f"file {self.path}" + (f", field '{field}'" if field else "")
        super().__init__(f"{where}: {message}")


def forced_mask(rule: tuple[str, int], admissible: int, ages: np.ndarray) -> np.ndarray:
    """Mask of the waiting requests (oldest first, ``ages`` in steps) that must be
    admitted when ``U = admissible`` of them are, under the admission ``rule``
    (``(mode, N)``, :func:`~bfio.lookahead.admission.parse_admission` of its text, parsed
    once by the caller): ``fifo``: the oldest ``U``; ``aging:N``: requests with age
    ``>= N``, oldest first, at most ``U`` of them; ``free``: none, unless every
    waiting request fits (``U = |R_wait|``), when all of them are admitted whatever the rule."""
    mode, n_age = rule
    n = int(np.shape(ages)[0])
    U = int(admissible)
    mask = np.zeros(n, dtype=bool)
    if U == n:
        mask[:] = True
    elif mode == "fifo":
        mask[:U] = True
    elif mode == "aging":
        mask[np.flatnonzero(np.asarray(ages) >= n_age)[:U]] = True
    return mask


#: Instances carry no slot count: their modelled step (:attr:`Instance.step_s`) takes the paper's ``B``.
INSTANCE_SLOTS = 72


@dataclass
class Instance:
    """The data of Eq. (IO) at one routing call (see the module docstring)."""

    base: np.ndarray
    free: np.ndarray
    sizes: np.ndarray
    ages: np.ndarray
    admission: str = "free"
    meta: dict = field(default_factory=dict)
    lifetimes: np.ndarray | None = None
    discount: float = UNDISCOUNTED
    #: the call's terms of ``J`` besides the imbalance (:attr:`ObjectiveTerms.extra
    #: <bfio.solvers.objective.ObjectiveTerms.extra>`); not saved in instance files
    extra: tuple = ()
    #: the modelled decode step at the call, placement ``auto``'s time budget
    #: (:func:`~bfio.solvers.placement.resolve_placement`): the paper's step of the
    #: largest load now (:meth:`~bfio.ground.constants.PaperConstants.step_of`) with
    #: ``B =`` :data:`INSTANCE_SLOTS` (``None``: computed so); not saved in instance files
    step_s: float | None = field(default=None, repr=False, compare=False)
    #: ``admission`` parsed (``(mode, N)``, :func:`~bfio.lookahead.admission.parse_admission`)
    rule: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        for name, minimum in (("base", 0), ("free", 0), ("sizes", 1), ("ages", 0), ("lifetimes", 1)):
            values = getattr(self, name)
            if values is None:
                continue
            arr = np.asarray(values)
            if arr.dtype.kind not in "iub" and (arr.dtype.kind != "f" or not np.all(np.isfinite(arr))
                                                or np.any(arr != np.round(arr))):
                raise InstanceError("<Instance>", "expected whole numbers (a value like 3.7 is not rounded)", name)
            if arr.size and arr.min() < minimum:
                raise InstanceError("<Instance>", f"expected values >= {minimum}, got {arr.min()}", name)
        if self.lifetimes is not None:
            self.lifetimes = np.clip(np.ascontiguousarray(self.lifetimes, dtype=np.int64).reshape(-1),
                                     1, np.atleast_2d(self.base).shape[1])
        self.base = np.ascontiguousarray(np.atleast_2d(self.base), dtype=np.int64)
        self.free = np.ascontiguousarray(self.free, dtype=np.int64).reshape(-1)
        self.sizes = np.ascontiguousarray(self.sizes, dtype=np.int64).reshape(-1)
        self.ages = np.ascontiguousarray(self.ages, dtype=np.int64).reshape(-1)
        self.rule = parse_admission(self.admission)
        self.discount = check_discount(self.discount)
        if self.step_s is None:
            self.step_s = PaperConstants().step_of(self.base[:, 0], INSTANCE_SLOTS)

    @property
    def workers(self) -> int:
        """``G``."""
        return int(self.base.shape[0])

    @property
    def horizon(self) -> int:
        """``H`` (the window has ``H + 1`` offsets)."""
        return int(self.base.shape[1]) - 1

    @property
    def waiting(self) -> int:
        return int(self.sizes.shape[0])

    @property
    def admissible(self) -> int:
        """``U = min(|R_wait|, sum_g cap_g)``."""
        return int(min(self.waiting, int(self.free.sum())))

    def forced(self) -> np.ndarray:
        """Mask of waiting requests that must be admitted (:func:`forced_mask`)."""
        return forced_mask(self.rule, self.admissible, self.ages)

    # -- the objective of Eq. (IO) -------------------------------------------------------
    @property
    def terms(self) -> ObjectiveTerms:
        """The objective's terms of this instance over every offset ``0..H``
        (:class:`~bfio.solvers.objective.ObjectiveTerms`: ``discount``, weights,
        ``lifetimes``; :meth:`~bfio.solvers.objective.ObjectiveTerms.fast` is the
        fast solver's window; :attr:`extra`, the call's other terms)."""
        terms = ObjectiveTerms.build(self.horizon, self.discount).with_lifetimes(self.lifetimes)
        return terms.with_terms(*self.extra) if self.extra else terms

    @property
    def weights(self) -> np.ndarray:
        """``delta^h`` for ``h = 0..H``."""
        return self.terms.weights

    @property
    def integral(self) -> bool:
        """True when ``J`` is an integer for every assignment (``delta = 1``, integer loads)."""
        return self.terms.integral

    def profiles(self) -> np.ndarray:
        """``(n, H + 1)``: what each waiting request adds at each offset if admitted
        (``s_j + h``; with ``lifetimes`` only while ``h < lifetimes[j]``)."""
        return self.terms.profiles(self.sizes)

    def loads(self, assign: np.ndarray) -> np.ndarray:
        """``Lhat_g(h)`` after admitting per ``assign`` (request -> worker or -1)."""
        assign = np.asarray(assign, dtype=np.int64)
        on = assign >= 0
        out = self.base.copy()
        np.add.at(out, assign[on], self.profiles()[on])
        return out

    def objective(self, assign: np.ndarray):
        """``J`` of ``assign`` (:meth:`ObjectiveTerms.evaluate
        <bfio.solvers.objective.ObjectiveTerms.evaluate>`, i.e.
        :func:`~bfio.solvers.objective.imbalance_objective` plus the :attr:`extra`
        terms): an exact ``int`` when :attr:`integral` without extra terms, else a float."""
        return self.terms.evaluate(self.loads(assign), assign)

    def lower_bound_envelope(self) -> float:
        """``G sum_h delta^h max_g base_g(h)``: no assignment can lower the envelope below it."""
        return float(self.workers * (self.base.max(axis=0).astype(np.float64) @ self.weights))

    def check(self, assign) -> None:
        """Raise :class:`ValueError` unless ``assign`` is feasible for Eq. (IO)."""
        assign = np.asarray(assign)
        if assign.shape != (self.waiting,):
            raise ValueError(f"assignment has shape {assign.shape}, expected ({self.waiting},)")
        if assign.dtype.kind not in "iu":
            raise ValueError(f"assignment dtype {assign.dtype} is not integer")
        if np.any((assign < -1) | (assign >= self.workers)):
            raise ValueError("assignment names a worker outside 0..G-1 (or -1)")
        counts = np.bincount(assign[assign >= 0], minlength=self.workers)
        if np.any(counts > self.free):
            g = int(np.flatnonzero(counts > self.free)[0])
            raise ValueError(f"worker {g} gets {counts[g]} requests but has {self.free[g]} free slots")
        if int(counts.sum()) != self.admissible:
            raise ValueError(f"{int(counts.sum())} requests admitted, Eq. (IO) needs exactly U = {self.admissible}")
        forced = self.forced()
        if np.any(assign[forced] < 0):
            raise ValueError(f"admission '{self.admission}' requires request {int(np.flatnonzero(forced & (assign < 0))[0])}")

    def is_feasible(self, assign) -> bool:
        try:
            self.check(assign)
        except ValueError:
            return False
        return True

    # -- JSON ---------------------------------------------------------------------------
    def to_dict(self) -> dict:
        if self.extra:
            raise ValueError(f"an instance file holds the imbalance term only, not {[t.name for t in self.extra]}")
        return {"format": FORMAT, "workers": self.workers, "horizon": self.horizon,
                "admission": self.admission, "discount": self.discount, "free": self.free.tolist(),
                "base_loads": self.base.tolist(),
                "waiting": {"prefill": self.sizes.tolist(), "age": self.ages.tolist(),
                            **({} if self.lifetimes is None else {"lifetime": self.lifetimes.tolist()})},
                "meta": self.meta}


def save_instance(inst: Instance, path) -> Path:
    """Write ``inst`` as JSON (atomically)."""
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(inst.to_dict()) + "\n")
    return path


def _int_list(path, name, value, *, minimum=None, length=None):
    if not isinstance(value, list):
        raise InstanceError(path, f"expected a list of integers, got {type(value).__name__}", name)
    for k, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v != int(v):
            raise InstanceError(path, f"entry {k} is {v!r}, expected an integer", name)
        if minimum is not None and v < minimum:
            raise InstanceError(path, f"entry {k} is {v}, expected >= {minimum}", name)
    if length is not None and len(value) != length:
        raise InstanceError(path, f"has {len(value)} entries, expected {length}", name)
    return np.asarray(value, dtype=np.int64)


def instance_from_dict(data, path="<dict>") -> Instance:
    """Validate a decoded instance; every error names the file and field."""
    if not isinstance(data, dict):
        raise InstanceError(path, "expected a JSON object at top level")
    _closed(path, data, INSTANCE_KEYS, "")
    if isinstance(data.get("waiting"), dict):
        _closed(path, data["waiting"], WAITING_KEYS, "waiting.")
    fmt = data.get("format", FORMAT)
    if fmt != FORMAT:
        raise InstanceError(path, f"unknown format {fmt!r}, expected {FORMAT!r}", "format")
    for key in ("free", "base_loads", "waiting"):
        if key not in data:
            raise InstanceError(path, "missing", key)
    free = _int_list(path, "free", data["free"], minimum=0)
    G = len(free)
    if G < 1:
        raise InstanceError(path, "needs at least one worker", "free")
    rows = data["base_loads"]
    if not isinstance(rows, list) or len(rows) != G:
        raise InstanceError(path, f"expected {G} rows (one per worker, as in 'free')", "base_loads")
    H = data.get("horizon")
    width = None if H is None else H + 1
    if H is not None and (not isinstance(H, int) or isinstance(H, bool) or H < 0):
        raise InstanceError(path, f"expected an integer >= 0, got {H!r}", "horizon")
    base = []
    for g, row in enumerate(rows):
        arr = _int_list(path, f"base_loads[{g}]", row, minimum=0, length=width)
        width = len(arr)
        base.append(arr)
    if width is None or width < 1:
        raise InstanceError(path, "rows must have H + 1 >= 1 entries", "base_loads")
    if "workers" in data and data["workers"] != G:
        raise InstanceError(path, f"says {data['workers']} workers but 'free' has {G}", "workers")
    waiting = data["waiting"]
    if not isinstance(waiting, dict) or "prefill" not in waiting:
        raise InstanceError(path, "expected an object with 'prefill' (and optional 'age') lists", "waiting")
    sizes = _int_list(path, "waiting.prefill", waiting["prefill"], minimum=1)
    ages = _int_list(path, "waiting.age", waiting.get("age", [0] * len(sizes)), minimum=0, length=len(sizes))
    lifetimes = None
    if "lifetime" in waiting:
        lifetimes = _int_list(path, "waiting.lifetime", waiting["lifetime"], minimum=1, length=len(sizes))
    admission = data.get("admission", "free")
    try:
        parse_admission(admission)
    except ConfigError as e:
        raise InstanceError(path, str(e), "admission") from None
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise InstanceError(path, "expected an object", "meta")
    # files written before the discount existed are delta = 1 (Eq. (IO) as printed)
    discount = data.get("discount", UNDISCOUNTED)
    try:  # the Instance checks the discount (check_discount), the one check left to it here
        return Instance(base=np.vstack(base), free=free, sizes=sizes, ages=ages, admission=admission, meta=meta,
                        lifetimes=lifetimes, discount=discount)
    except ConfigError as e:  # every other field is checked above, naming it
        raise InstanceError(path, str(e), "discount") from None


#: The keys an instance file may hold (the format is closed, like the config):
#: :meth:`Instance.to_dict` writes exactly these.
INSTANCE_KEYS = ("format", "workers", "horizon", "admission", "discount", "free", "base_loads", "waiting", "meta")
WAITING_KEYS = ("prefill", "age", "lifetime")


def _closed(path, obj: dict, allowed, prefix: str) -> None:
    """Refuse a key the format does not define, naming it and the known ones."""
    for key in obj:
        if key not in allowed:
            raise InstanceError(path, f"unknown key (known: {', '.join(allowed)})", prefix + str(key))


def load_instance(path) -> Instance:
    """Read and validate an instance JSON file."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise InstanceError(path, f"cannot read ({e.strerror or e})") from None
    try:
        data = json.loads(text, object_pairs_hook=refuse_repeated_keys(
            lambda k: InstanceError(path, "key appears twice (which value is meant is ambiguous)", k)))
    except json.JSONDecodeError as e:
        raise InstanceError(path, f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    return instance_from_dict(data, path)


def instance_from_state(state, decode_estimate: np.ndarray, horizon: int, admission: str = "free",
                        meta: dict | None = None, new_requests: str = "persist",
                        discount: float = UNDISCOUNTED) -> Instance:
    """Build the Eq. (IO) instance of a routing call from a
    :class:`~bfio.policies.base.RoutingState` and a predictor's ``o_hat``
    (:func:`instance_of_call` with the objective's terms of ``horizon``,
    ``discount`` and ``new_requests``)."""
    return instance_of_call(state, decode_estimate, ObjectiveTerms.build(horizon, discount, new_requests),
                            admission, meta)


def instance_of_call(state, decode_estimate: np.ndarray, terms: ObjectiveTerms, admission: str = "free",
                     meta: dict | None = None) -> Instance:
    """The Eq. (IO) instance of a routing call (Section 4) from a
    :class:`~bfio.policies.base.RoutingState`, a predictor's ``o_hat`` of every
    request and the objective's terms (:class:`~bfio.solvers.objective.ObjectiveTerms`,
    e.g. a BF-IO policy's): its window ``0..terms.horizon`` (all ``H + 1``
    offsets, whatever ``terms.window`` the fast path solves), its discount, and
    the waiting requests' lifetimes (:meth:`~bfio.solvers.objective.ObjectiveTerms.for_call`)
    and its extra terms (:attr:`~bfio.solvers.objective.ObjectiveTerms.extra`)."""
    base = predicted_loads(state.slot_request, state.workload.prefill, state.generated,
                           decode_estimate, terms.horizon)
    step_s = PaperConstants().step_of(base[:, 0], INSTANCE_SLOTS)  # read off the loads now, as Instance would
    ages = state.step - state.enter_step[state.pool]
    call = terms.for_call(decode_estimate, state.pool)
    return Instance(base=base, free=np.asarray(state.free, dtype=np.int64), sizes=state.pool_prefill,
                    ages=ages, admission=admission, meta={"step": int(state.step), **(meta or {})},
                    lifetimes=call.lifetimes, discount=call.discount, extra=call.extra, step_s=step_s)


def solve_instance_file(path, solver: str = "fast", time_limit_s: float | None = None,
                        on_error: str = "fail") -> dict:
    """Load an instance file, solve it with ``solver`` and return a JSON-ready dict
    with ``objective``, ``assignment`` (request index -> worker or -1),
    ``proven_optimal``, ``wall_s`` and the solver's bound and status."""
    inst = load_instance(path)
    sol = solve(inst, solver, time_limit_s=time_limit_s, on_error=on_error)
    return {"instance": str(path), "workers": inst.workers, "horizon": inst.horizon, "discount": inst.discount,
            "waiting": inst.waiting, "admissible": inst.admissible, "admission": inst.admission,
            **sol.to_dict()}


__all__ = ["FORMAT", "INSTANCE_SLOTS", "Instance", "InstanceError", "forced_mask", "save_instance", "load_instance",
           "instance_from_dict", "instance_from_state", "instance_of_call", "solve_instance_file"]
