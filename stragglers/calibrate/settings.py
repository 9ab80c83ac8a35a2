"""The `calibration` config section, checked when the workflow loads (docs/calibration.md).

Every mistake stops the run before any job, naming the setting: a knob that is not a setting
of the dataset's generator, a range the generator would reject, a trial seed equal to the seed
the fit is judged on, a method outside the calibration set.
"""

from __future__ import annotations

import hashlib
import json
import logging
import typing
from dataclasses import fields
from pathlib import Path
from typing import Any

from stragglers.evaluate.fingerprint import CALIBRATION_SET

# DEFAULT_SEED: the default run's data is where the fitted settings are judged, so no trial may
# generate from it, whatever the config's own `seed` is
from stragglers.formats.dataset_spec import DEFAULT_SEED
from stragglers.formats.datasets import PAPER_TRACE_OF_KIND

log = logging.getLogger(__name__)

# Knobs the search does not own: the trial size and the seed come from the section itself.
RESERVED_KNOBS = ("n_jobs", "seed")
GENERATED_KINDS = ("google-2011", "alibaba-2018")


def generator_class(kind: str):
    """The generator config class of a dataset kind."""
    from stragglers.traces.generate import AlibabaGeneratorConfig, GoogleGeneratorConfig

    classes = {"google-2011": GoogleGeneratorConfig, "alibaba-2018": AlibabaGeneratorConfig}
    if kind not in classes:
        raise ValueError(f"no generator for dataset kind {kind!r}; generated: {list(classes)}")
    return classes[kind]


def knob_type(kind: str, knob: str) -> type:
    """int or float: how a knob is proposed (the generator field's type)."""
    cls = generator_class(kind)
    hints = typing.get_type_hints(cls)
    return int if hints[knob] is int else float


def active_calibration(config: dict) -> dict:
    return config.get("calibration") or {}


def dataset_knobs(section: dict, dataset: str) -> dict[str, dict]:
    """The knobs searched for one dataset: `knobs`, with the dataset's own ranges of
    `dataset_knobs.<dataset>` over them (a duration range differs between a 300 s and a
    60 s checkpoint grid). Entries of datasets not searched are ignored: a config that
    searches its own datasets keeps the default section's entries."""
    return {**section["knobs"], **(section.get("dataset_knobs") or {}).get(dataset, {})}


def _fail(where: str, message: str) -> None:
    raise ValueError(f"config calibration.{where}: {message}")


def check_calibration(config: dict) -> None:
    """Check the section against the datasets and their generators; raises naming the setting."""
    section = active_calibration(config)
    if not section:
        return
    forbidden = {DEFAULT_SEED, int(config["seed"])}
    for seed in section["seeds"]:
        if int(seed) in forbidden:
            _fail(
                "seeds",
                f"{seed} is the seed the fitted settings are judged on (the run's seed "
                f"{config['seed']} and the default {DEFAULT_SEED} are never searched on)",
            )
    if len(set(section["seeds"])) != len(section["seeds"]):
        _fail("seeds", f"repeated seed in {section['seeds']}")
    for seed in section.get("check_seeds", []):
        if int(seed) in forbidden or int(seed) in section["seeds"]:
            _fail(
                "check_seeds",
                f"{seed} is a search seed or the judged seed: the check uses seeds the search "
                "never saw, and the judged seed is the default run's",
            )
    for method in section["methods"]:
        if method not in CALIBRATION_SET:
            _fail(
                "methods",
                f"{method} is not in the calibration set {list(CALIBRATION_SET)} "
                "(stragglers/evaluate/fingerprint.py): the search fits those rows only",
            )
    # realism entries of datasets not searched are ignored, as `dataset_knobs` entries are (a
    # config that searches its own datasets keeps the default section's entries)
    for dataset in sorted(set(section.get("realism") or {}) & set(section["datasets"])):
        ds = config["datasets"].get(dataset)
        if ds is not None and ds["kind"] != REALISM_KIND:
            _fail(
                f"realism.{dataset}",
                f"the tails are measured from Google task_events: {dataset} is {ds['kind']}",
            )
    for dataset, target in sorted((section.get("targets") or {}).items()):
        ds, real = config["datasets"].get(dataset), config["datasets"].get(target)
        if dataset not in section["datasets"] or ds is None or real is None:
            # as `realism` entries and searched datasets: a config with other datasets still
            # loads; `snakemake calibrate` names a missing target (target_dataset)
            continue
        if real["source"] == "generate":
            _fail(f"targets.{dataset}", f"{target} is generated: a target is a real dataset")
        if ds is not None and PAPER_TRACE_OF_KIND.get(real["kind"]) != PAPER_TRACE_OF_KIND.get(
            ds["kind"]
        ):
            _fail(
                f"targets.{dataset}",
                f"{target} ({real['kind']}) is not of the paper trace of {dataset} ({ds['kind']})",
            )
    for dataset in section["datasets"]:
        knobs = dataset_knobs(section, dataset)
        ds = config["datasets"].get(dataset)
        if ds is None:
            # a config with other datasets still loads; `snakemake calibrate` names the setting
            # (stragglers.rules.calibrate.last_rounds)
            continue
        if ds["source"] != "generate" or ds["kind"] not in GENERATED_KINDS:
            _fail("datasets", f"{dataset} is not generated (source generate, a generated kind)")
        generator_seed = (ds.get("generator") or {}).get("seed")
        if generator_seed is not None and int(generator_seed) in section["seeds"]:
            _fail("seeds", f"{generator_seed} is dataset {dataset}'s own generator seed")
        cls = generator_class(ds["kind"])
        known = {f.name for f in fields(cls)}
        for knob, bounds in knobs.items():
            where = (
                f"dataset_knobs.{dataset}.{knob}"
                if knob in (section.get("dataset_knobs") or {}).get(dataset, {})
                else f"knobs.{knob}"
            )
            if knob in RESERVED_KNOBS:
                _fail(where, "set by the section itself (n_jobs, seeds), not searched")
            if knob not in known:
                _fail(where, f"not a setting of {cls.__name__} ({dataset}); known: {sorted(known)}")
            low, high = bounds["low"], bounds["high"]
            if not low < high:
                _fail(where, f"low {low} must be below high {high}")
            if bounds.get("log") and low <= 0:
                _fail(where, f"a log range needs low > 0, got {low}")
            if knob_type(ds["kind"], knob) is int and not (
                float(low).is_integer() and float(high).is_integer()
            ):
                _fail(where, f"{knob} is an integer setting; bounds {low}, {high} must be whole")
            start = start_settings(ds, knobs)
            for value in (low, high):
                try:
                    cls.from_dict({**(ds.get("generator") or {}), **start, knob: value})
                except ValueError as error:
                    _fail(where, f"{value} is outside what the generator accepts: {error}")


def start_settings(dataset: dict, knobs: dict[str, dict]) -> dict[str, Any]:
    """The dataset's configured value of each knob (its generator's default where unset),
    clipped into the knob's range: the search's first trial."""
    generator = dataset.get("generator") or {}
    cls = generator_class(dataset["kind"])
    defaults = {f.name: f.default for f in fields(cls)}
    start = {}
    for knob, bounds in knobs.items():
        if knob not in defaults:
            continue
        value = generator.get(knob, defaults[knob])
        start[knob] = min(max(value, bounds["low"]), bounds["high"])
    return start


REALISM_KIND = "google-2011"


def realism_settings(section: dict, dataset: str) -> dict[str, Any] | None:
    """The real rows a dataset's trials are held to, with the schema's defaults; None when the
    section names none for it, or when its file is missing (a warning: the search then runs
    unconstrained, and its digest says so)."""
    entry = (section.get("realism") or {}).get(dataset)
    if not entry:
        return None
    path = Path(entry["task_events"])
    if not path.exists():
        log.warning(
            "calibration.realism.%s: task_events %s does not exist; the search of %s runs "
            "without the realism constraint",
            dataset,
            path,
            dataset,
        )
        return None
    realism = {
        "task_events": str(path),
        "n_jobs": int(entry.get("n_jobs", 30)),
        "tolerance": float(entry.get("tolerance", 0.0)),
    }
    if entry.get("reach_tolerance") is not None:  # absent when off: earlier digests hold
        realism["reach_tolerance"] = float(entry["reach_tolerance"])
    return realism


def target_dataset(config: dict, dataset: str) -> str | None:
    """The real dataset whose rows a dataset's search fits (`calibration.targets`); None:
    Table 3's. A target the config does not configure stops the search, naming it."""
    target = (active_calibration(config).get("targets") or {}).get(dataset)
    if target is not None and target not in config["datasets"]:
        _fail(
            f"targets.{dataset}",
            f"{target} is not a configured dataset: {sorted(config['datasets'])}",
        )
    return target


def search_fingerprint(
    section: dict,
    dataset: dict,
    replay: dict,
    knobs: dict[str, dict] | None = None,
    realism: dict[str, Any] | None = None,
    target: dict[str, Any] | None = None,
) -> str:
    """A digest of everything that decides a search's trials (not `rounds`: raising the budget
    continues the same search). The storage records it and refuses another config's trials.
    `knobs`: the dataset's knobs (`dataset_knobs`), the section's by default; `target`: what
    decides a real target's rows (its name, dataset config and method parameters)."""
    decisive = {
        "knobs": section["knobs"] if knobs is None else knobs,
        "seeds": section["seeds"],
        "n_jobs": section["n_jobs"],
        "batch": section["batch"],
        "sampler_seed": section["sampler_seed"],
        "startup_trials": section["startup_trials"],
        "methods": section["methods"],
        "dataset": dataset,
        "replay": replay,
    }
    if realism is not None:  # absent when off, so that unconstrained searches keep their digest
        decisive["realism"] = realism
    if target is not None:  # the same: Table 3's searches keep their digest
        decisive["target"] = target
    text = json.dumps(decisive, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
