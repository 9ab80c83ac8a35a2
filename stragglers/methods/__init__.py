"""The online straggler predictors: one module per method, each a `Method` subclass
(stragglers.methods.base) that sets `name`; the registry (stragglers.methods.registry) finds
them, and the methods of the folders the config names in `method_dirs`.

Each method declares its parameters beside their defaults (`defaults = {"alpha": Param(0.5,
float, ge=0, le=1, doc="...")}`), a subclass only those that differ from its base's;
`check_method_params` runs the constructor's check on a
config's parameters (the workflow does so when it loads). tests/test_method_contract.py runs
every registered method through the contract checks of tests/method_checks.py.
"""

from __future__ import annotations

from stragglers.methods.base import Checkpoint, JobInfo, Method, Param
from stragglers.methods.registry import Registry, UnknownMethodError

__all__ = [
    "METHODS",
    "Checkpoint",
    "JobInfo",
    "Method",
    "Param",
    "UnknownMethodError",
    "available_methods",
    "check_method_params",
    "declared_cross_job",
    "get_method",
    "load_method_dirs",
    "method_entry",
    "method_files",
]

METHODS = Registry(__name__, Method, "method")
available_methods = METHODS.names
get_method = METHODS.get
check_method_params = METHODS.check_params
load_method_dirs = METHODS.load_dirs
method_files = METHODS.source_files


def declared_cross_job(name: str) -> bool:
    """Whether a method learns from earlier jobs (`cross_job = True`): the workflow asks, to
    give its predict jobs every shard of the dataset."""
    return bool(get_method(name).cross_job)


def method_entry(label: str, entry: dict | None) -> tuple[str, dict]:
    """The method a config `methods` entry runs and that method's parameters.

    An entry is `<method name>: {parameters}`, or `<label>: {method: <method name>,
    parameters}`, which runs the named method under the label (one method under several
    settings in one run, each its own row: `Spark 3 speculation: {method: Spark-speculation,
    multiplier: 1.5, quantile: 0.75}`). The label is the method's name in every output and a
    folder of results/, so it may not hold a slash, and may not be another method's name."""
    params = dict(entry or {})
    name = params.pop("method", label)
    if not isinstance(name, str):
        raise ValueError(f"config methods.{label}: 'method' must be a method's name, got {name!r}")
    if not label or "/" in label or "\\" in label or label != label.strip() or label[0] == ".":
        raise ValueError(
            f"config methods: {label!r} cannot name a folder of results/ (no slash or "
            "backslash, no leading dot, no surrounding spaces)"
        )
    if name != label and label in available_methods():
        raise ValueError(
            f"config methods.{label}: the label is the name of another method; "
            f"choose a label that is not a method's name to run {name!r}"
        )
    return name, params
