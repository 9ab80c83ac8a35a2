"""The checks the workflow runs on its config when it loads (workflow/rules/common.smk), before
any job: a typo in a method's name or parameter, a local folder that does not exist, a
sensitivity or calibration setting out of range stops `snakemake -n` with a message naming the
setting. The JSON schema (workflow/schemas/config.schema.yaml) checks the config's shape first;
these are the checks a schema cannot make (docs/configuration.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stragglers.calibrate.settings import check_calibration
from stragglers.launch import launch_datasets
from stragglers.launch.methods import available_launch_methods, check_launch_params
from stragglers.methods import available_methods, check_method_params, method_entry
from stragglers.methods.base import reject_renamed
from stragglers.rules.sensitivity import check_sensitivity


def _check_params(check, name: str, params: dict | None, where: str) -> None:
    try:
        check(name, params)
    except ValueError as error:
        raise ValueError(f"{error} (config {where})") from None


LOCAL_PATH_SETTINGS = ("raw_dir", "sha256sum")


def resolve_shipped_paths(config: dict[str, Any], workflow_dir: str | Path) -> None:
    """A local dataset's relative `raw_dir` / `sha256sum` that the working directory lacks but
    the workflow's folder holds (data shipped with the repository, e.g. the default config's
    real jobs) is made absolute there, so that a config runs from any `--directory`."""
    for dataset in config["datasets"].values():
        if dataset.get("source") != "local":
            continue
        for setting in LOCAL_PATH_SETTINGS:
            value = dataset.get(setting)
            if not value or Path(value).is_absolute() or Path(value).exists():
                continue
            shipped = Path(workflow_dir) / value
            if shipped.exists():
                dataset[setting] = str(shipped)


def check_config(config: dict[str, Any]) -> None:
    """Every check of the config that needs the code (the methods' declarations, the launch
    methods, the sensitivity and calibration sections) or the file system; the first problem
    found is raised as a ValueError naming its setting. Methods from `method_dirs` must be
    loaded first (stragglers.methods.load_method_dirs)."""
    available = available_methods()
    methods = config["methods"]
    # a label runs its `methods` entry, or the method of that name with its defaults
    entries = {label: method_entry(label, methods.get(label)) for label in methods}
    unknown = sorted({name for name, _ in entries.values()} - set(available))
    if unknown:
        raise ValueError(f"config methods: unknown method(s) {unknown}; available: {available}")
    launch = config.get("launch") or {}
    _check_launch_methods(config, launch)
    # every method's parameters against its declaration (types, ranges, renamed names): a bad
    # parameter stops here, before any job, not in the predict job
    for label, (name, params) in entries.items():
        _check_params(check_method_params, name, params, f"methods.{label}")
    _check_audit_methods(config, available)
    grids = (config.get("tuning") or {}).get("grids") or {}
    _check_tuning_grids(grids, methods)
    for name, params in (launch.get("methods") or {}).items():
        _check_params(check_launch_params, name, params, f"launch.methods.{name}")
    reject_renamed("config launch", launch, ("refit_every", "history_jobs"), noun="setting")
    for name, dataset in config["datasets"].items():
        if dataset["source"] == "local" and not Path(dataset["raw_dir"]).exists():
            raise ValueError(f"config datasets.{name}.raw_dir: {dataset['raw_dir']} does not exist")
    # the datasets `replicates` and `sensitivity` add, and the generator's calibration
    check_sensitivity(config, sorted(set(available) | set(methods)))
    check_calibration(config)
    for label in grids:
        if label not in methods:
            raise ValueError(f"config tuning.grids: {label} is not among the configured methods")


def _check_launch_methods(config: dict[str, Any], launch: dict[str, Any]) -> None:
    """`launch.datasets` names datasets of the config and `launch.methods` known methods."""
    launch_methods = list(launch.get("methods") or {})
    launch_datasets(config)
    unknown = sorted(set(launch_methods) - set(available_launch_methods()))
    if unknown:
        raise ValueError(
            f"config launch.methods: unknown launch method(s) {unknown}; "
            f"available: {sorted(available_launch_methods())}"
        )


def _check_audit_methods(config: dict[str, Any], available: list[str]) -> None:
    """Every `audit.methods` entry names a known method, with parameters it declares."""
    for label, entry in ((config.get("audit") or {}).get("methods") or {}).items():
        if entry["method"] not in available:
            raise ValueError(
                f"config audit.methods.{label}: unknown method {entry['method']!r}; "
                f"available: {available}"
            )
        _check_params(
            check_method_params, entry["method"], entry.get("params"), f"audit.methods.{label}"
        )


def _check_tuning_grids(grids: dict[str, dict], methods: dict[str, Any]) -> None:
    """Every value of every `tuning.grids` entry is a valid parameter of its method."""
    for label, grid in grids.items():
        for key, values in grid.items():
            for value in values:
                _check_params(
                    check_method_params,
                    method_entry(label, methods.get(label))[0],
                    {key: value},
                    f"tuning.grids.{label}.{key}",
                )
