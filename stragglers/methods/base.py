"""The interface every straggler predictor implements.

The replay (`stragglers.replay`) drives a method through one job at a time:

    method = MethodClass(params, seed)
    method.start_job(job_info)
    for checkpoint in checkpoints:           # once prediction has started
        flags = method.predict(checkpoint)   # one bool per running task in the checkpoint

A method sees, at each checkpoint, the finished tasks (features and latency) and the running
tasks that have not been flagged yet (features from windows that ended by then, elapsed
time); never a running task's latency. Methods that are allowed more (the Oracle, Wrangler's
labelled training split) say so with `privileged = True` and receive the true latencies in
`JobInfo.true_latency`; their results are marked as privileged in every table. A method that
reads rules of the replay protocol names them in `protocol_rules` and reads them as
`self.rules.<rule>`.
"""

from __future__ import annotations

import abc
import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from stragglers.formats.protocols import OUR_RULES, ProtocolRules


@dataclass(frozen=True)
class JobInfo:
    job_id: str
    n_tasks: int
    feature_names: tuple[str, ...]
    straggler_threshold: float  # tau: latency at or above which a task is a straggler
    seed: int  # per (method, job) seed derived from the config's seed
    true_latency: np.ndarray | None = None  # only for privileged methods
    # cross-job methods only (Method.cross_job): the dataset's jobs, handed out once finished
    # (stragglers.replay.history.JobHistory), and this job's start on the trace's clock
    history: Any = None
    job_start: float = float("nan")
    # methods with uses_machine_state: the columns of the Checkpoint's machine state arrays
    machine_state_names: tuple[str, ...] = ()
    # the replay's checkpoint grid (checkpoints at grid_origin + k * checkpoint_interval) and
    # the speculative-resume kill delay tau_kill - tau_est the simulator uses for this dataset
    # (`ReplaySettings.resume_kill_delay`: simulation.policies.kill_delay, by default one
    # checkpoint interval); NaN when the caller has no grid
    checkpoint_interval: float = float("nan")
    grid_origin: float = float("nan")
    kill_delay: float = float("nan")
    # the replay protocol's rules (stragglers/formats/protocols.py); a method reads the ones it
    # declares in `Method.protocol_rules`, through `self.rules`
    rules: ProtocolRules = OUR_RULES


@dataclass(frozen=True)
class Checkpoint:
    time: float  # seconds on the trace's clock
    index: int  # position of the checkpoint on the job's grid (0 = job start)
    first_prediction: bool  # True at the first checkpoint where prediction runs
    finished_tasks: np.ndarray  # int positions, (n_fin,)
    finished_features: np.ndarray  # (n_fin, d)
    finished_latency: np.ndarray  # (n_fin,)
    running_tasks: np.ndarray  # int positions of running, not yet flagged tasks, (n_run,)
    running_features: np.ndarray  # (n_run, d)
    running_elapsed: np.ndarray  # seconds since each running task started, (n_run,)
    # True when the protocol already min-max scaled features and latencies with all tasks'
    # final values (replay rule `scaling: final`); methods then use them as given
    prescaled: bool = False
    # methods with uses_machine_state only (None otherwise, and for kinds without it): the
    # state of each task's machine at its latest window available now (`*_machine_state`)
    # and just before the task started (`*_launch_state`); see stragglers.convert.machines
    finished_machine_state: np.ndarray | None = None  # (n_fin, m)
    running_machine_state: np.ndarray | None = None  # (n_run, m)
    finished_launch_state: np.ndarray | None = None
    running_launch_state: np.ndarray | None = None
    # positions into running_tasks in the reference script's row order (stragglers first,
    # then the others, each by task position); set on the aligned timeline under the rule
    # `outlier_batch: running_only`, where the order changes SOD's batch scores
    running_order: np.ndarray | None = None


# Parameters renamed so that one idea has one name: a config still using the old
# name is rejected with the new one (by the workflow when it loads, and by the constructors)
RENAMED_PARAMS: dict[str, str] = {
    "earlier_jobs": "history_jobs",  # LASER
    "max_history_jobs": "history_jobs",  # START, START-MLE
    "max_train_jobs": "history_jobs",  # the launch stage's setting
    "retrain_every": "refit_every",  # START, the launch stage's setting
}

_KINDS = {
    int: "an integer",
    float: "a number",
    bool: "true or false",
    str: "a text",
    list: "a list",
}
_PLURAL = {int: "integers", float: "numbers", bool: "booleans", str: "texts"}


@dataclass(frozen=True)
class Param:
    """A method parameter: its default, type, allowed values and a one-line `doc` (the
    parameter tables of docs/methods.md are made from it: stragglers.report.methods_docs),
    checked by the workflow when it loads and by the constructor.

    `type` is int, float (any real number; ints accepted), bool, str or list (of `items`);
    `ge`/`gt`/`le`/`lt` bound numbers (a list's items); `choices` are the only texts a str
    takes, or special values a number also takes (PU-BG's "balanced"); `nullable`: None too.
    Declared in the class body: `defaults = {"alpha": Param(0.5, float, ge=0, le=1,
    doc="...")}`."""

    default: Any
    type: type
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    choices: tuple = ()
    items: type | None = None
    nullable: bool = False
    doc: str = ""

    def __post_init__(self):
        if self.type not in _KINDS:
            raise TypeError(
                f"Param: type must be one of int, float, bool, str, list; got {self.type!r}"
            )
        if self.type is list and self.items not in _PLURAL:
            raise TypeError("Param: a list parameter names its items' type (items=int, float, ...)")
        object.__setattr__(self, "choices", tuple(self.choices))

    def allowed(self) -> str:
        """What the parameter takes, in words: 'a number in [0, 1]', 'an integer >= 1'."""
        if self.type is str and self.choices:
            text = "one of " + ", ".join(repr(c) for c in self.choices)
        else:
            text = f"a list of {_PLURAL[self.items]}" if self.type is list else _KINDS[self.type]
            low = (
                f"[{self.ge!r}"
                if self.ge is not None
                else f"({self.gt!r}"
                if self.gt is not None
                else None
            )
            high = (
                f"{self.le!r}]"
                if self.le is not None
                else f"{self.lt!r})"
                if self.lt is not None
                else None
            )
            if low and high:
                text += f" in {low}, {high}"
            elif low:
                text += f" {'>=' if self.ge is not None else '>'} {low[1:]}"
            elif high:
                text += f" {'<=' if self.le is not None else '<'} {high[:-1]}"
            if self.type is list:
                text += " (at least one)"
            if self.choices:
                text += " or " + " or ".join(repr(c) for c in self.choices)
        return text + (" or null" if self.nullable else "")

    def accepts(self, value: Any) -> bool:
        if value is None:
            return self.nullable
        if self.choices and _in(value, self.choices):
            return True
        if self.type is str:
            return isinstance(value, str) and not self.choices
        if self.type is list:
            return (
                isinstance(value, (list, tuple))
                and len(value) > 0
                and all(self._scalar_ok(item, self.items) for item in value)
            )
        return self._scalar_ok(value, self.type)

    def _scalar_ok(self, value: Any, kind: type) -> bool:
        if kind is bool:
            return isinstance(value, (bool, np.bool_))
        if kind is str:
            return isinstance(value, str)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            return False
        if kind is int and not isinstance(value, numbers.Integral):
            return False
        if math.isnan(value):
            return False
        return (
            (self.ge is None or value >= self.ge)
            and (self.gt is None or value > self.gt)
            and (self.le is None or value <= self.le)
            and (self.lt is None or value < self.lt)
        )

    def coerce(self, value: Any) -> Any:
        """`value`, or the number / boolean a text spells for a parameter of that type:
        Snakemake's `--config` hands nested values over as text (`alpha: 0.5` is "0.5"), and
        YAML reads `1e-4` as text. Anything else is returned unchanged."""
        if self.type is list and isinstance(value, (list, tuple)):
            return type(value)(self._coerce_scalar(item, self.items) for item in value)
        return self._coerce_scalar(value, self.type)

    def _coerce_scalar(self, value: Any, kind: type) -> Any:
        if not isinstance(value, str) or _in(value, self.choices):
            return value
        if kind is bool and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if kind in (int, float):
            try:
                return int(value)
            except ValueError:
                pass
        if kind is float:
            try:
                return float(value)
            except ValueError:
                pass
        return value

    def check(self, what: str, name: str, value: Any) -> Any:
        """The value (numbers given as text read as numbers, see `coerce`); a ValueError
        naming `what`, the parameter and what it takes unless it is allowed."""
        coerced = self.coerce(value)
        if self.accepts(coerced):
            return coerced
        shown = repr(coerced) + (
            " (text)" if isinstance(coerced, str) and self.type is not str else ""
        )
        raise ValueError(f"{what}: parameter {name!r} must be {self.allowed()}, got {shown}")


def _in(value: Any, choices: tuple) -> bool:
    return any(type(value) is type(c) and value == c for c in choices)


def reject_renamed(what: str, settings: dict[str, Any], known, noun: str = "parameter") -> None:
    """A ValueError if `settings` uses an old name (RENAMED_PARAMS) of one in `known`."""
    for key in settings:
        new = RENAMED_PARAMS.get(key)
        if key not in known and new in known:
            raise ValueError(f"{what}: {noun} {key!r} was renamed to {new!r}")


def default_values(defaults: dict[str, Any]) -> dict[str, Any]:
    """Parameter name -> default value of a `defaults` mapping (Param or a bare value)."""
    return {k: v.default if isinstance(v, Param) else v for k, v in defaults.items()}


def merged_params(
    what: str, defaults: dict[str, Any], params: dict[str, Any] | None
) -> dict[str, Any]:
    """`params` over the defaults' values; a parameter that is unknown, renamed, of the wrong
    type or out of its declared range is an error naming `what`, the parameter and what it
    takes (the workflow runs the same check on the config when it loads)."""
    params = dict(params or {})
    reject_renamed(what, params, defaults)
    for key in params:
        if key not in defaults:
            known = ", ".join(sorted(defaults)) or "none"
            raise ValueError(f"{what}: unknown parameter {key!r}; known: {known}")
        spec = defaults[key]
        if isinstance(spec, Param):
            params[key] = spec.check(what, key, params[key])
    return {**default_values(defaults), **params}


class _NotTaken:
    def __repr__(self) -> str:
        return "NOT_TAKEN"


# in a subclass's `defaults`: a parameter of its base that the subclass does not take
NOT_TAKEN: Any = _NotTaken()


def inherited_params(what: str, inherited: dict[str, Any], declared: dict[str, Any]) -> dict:
    """The parameters of a class whose base has `inherited` and which declares `declared`:
    the base's parameters it leaves alone, then its own in their order. A bare value over an
    inherited Param changes that Param's default only; NOT_TAKEN drops an inherited one. A
    TypeError naming `what` for a declaration that repeats or cannot apply to the base's."""
    merged = {key: spec for key, spec in inherited.items() if key not in declared}
    for key, spec in declared.items():
        base = inherited.get(key)
        if spec is NOT_TAKEN:
            if key not in inherited:
                raise TypeError(f"{what}: NOT_TAKEN {key!r} is no parameter of its base")
            continue
        if isinstance(base, Param) and not isinstance(spec, Param):
            if not base.accepts(spec):
                raise TypeError(f"{what}: the default of {key!r} must be {base.allowed()}")
            spec = dataclasses.replace(base, default=spec)
        if key in inherited and spec == base:
            raise TypeError(f"{what}: {key!r} repeats its base's declaration; leave it out")
        merged[key] = spec
    return merged


class DeclaredRules:
    """The protocol rules a method declares (`Method.protocol_rules`), as attributes:
    `self.rules.outlier_scaling`. Reading one it does not declare is an AttributeError naming
    the method and the rule."""

    def __init__(self, method: str, rules: ProtocolRules, names: tuple[str, ...]):
        self._method = method
        self.__dict__.update({name: getattr(rules, name) for name in names})

    def __getattr__(self, name: str) -> Any:  # only names not set in __init__
        raise AttributeError(
            f"method {self.__dict__.get('_method')} reads protocol rule {name!r}, which it does "
            "not declare in protocol_rules"
        )


class Method(abc.ABC):
    """A straggler predictor. Subclasses set `name` and `family` and are found by the registry.

    `defaults` and `protocol_rules` are inherited: a subclass declares only the parameters (or
    parameter defaults) and rules it adds to its base's (`inherited_params`)."""

    name: ClassVar[str]
    family: ClassVar[str]  # table grouping, e.g. "Ours", "Supervised", "Outlier detection"
    privileged: ClassVar[bool] = False  # sees true latencies (Oracle, Wrangler)
    # parameter name -> Param(default, type, range) (stragglers.methods.base.Param)
    defaults: ClassVar[dict[str, Any]] = {}
    # the replay protocol's rules the method reads (stragglers/formats/protocols.py): start_job
    # hands their values over as `self.rules`
    protocol_rules: ClassVar[tuple[str, ...]] = ()
    # learns from earlier jobs: the replay fills JobInfo.history / job_start, and the predict
    # rule gives it every shard of the dataset (methods.declared_cross_job)
    cross_job: ClassVar[bool] = False
    # reads the machine's state: the replay fills Checkpoint.*_machine_state / *_launch_state
    uses_machine_state: ClassVar[bool] = False
    # package modules the method imports only inside its functions, because they import
    # heavy libraries at their top: the registry counts their files among the method's
    # sources all the same (an edit to one reruns the method's jobs)
    lazy_modules: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        what = f"method class {cls.__name__}"
        base = super(cls, cls)
        cls.defaults = inherited_params(what, base.defaults, vars(cls).get("defaults", {}))
        declared = tuple(vars(cls).get("protocol_rules", ()))
        known = [field.name for field in dataclasses.fields(ProtocolRules)]
        for rule in declared:
            if rule not in known:
                raise TypeError(
                    f"{what}: protocol_rules names {rule!r}, which is no protocol rule; "
                    f"known: {', '.join(known)}"
                )
            if rule in base.protocol_rules:
                raise TypeError(f"{what}: protocol rule {rule!r} is its base's already")
        cls.protocol_rules = (*base.protocol_rules, *declared)

    def __init__(self, params: dict[str, Any] | None = None, seed: int = 0):
        self.params = merged_params(f"method {self.name}", self.defaults, params)
        self.seed = int(seed)

    def start_job(self, job: JobInfo) -> None:
        """Reset per-job state. Called before the first checkpoint of every job; a subclass
        that overrides it calls it first."""
        self.job = job
        self.rules = DeclaredRules(self.name, job.rules, self.protocol_rules)

    @abc.abstractmethod
    def predict(self, checkpoint: Checkpoint) -> np.ndarray:
        """Return a bool array, True for each running task predicted to straggle."""

    def resume_attempts(self) -> int | None:
        """r + 1 attempts the speculative-resume policy should launch for the tasks flagged at
        the last checkpoint (SRQuant, LASER choose r per job); None: the configured default."""
        return None

    def excluded_from_evaluation(self) -> np.ndarray | None:
        """Task positions this method used with their labels (not scored), or None."""
        return None
