"""A dataset's settings, read once: its config entry (`datasets.<name>`, or a dataset the
replicate and sensitivity targets derive) checked and filled in with the defaults, and the
global `replay` section overlaid with the dataset's own grid. The workflow builds one
DatasetSpec per dataset when it loads (workflow/rules/common.smk) and every rule reads its
dataset's settings from it; a bad setting stops the load with a message naming the dataset and
the setting.

The defaults are stated here once: workflow/schemas/config.schema.yaml gives the same
`min_tasks` and `latency_definition` (its validation fills them in; tests/test_dataset_spec.py
checks the two agree); the production priorities have no schema default (a calibration
search's fingerprint includes the entry, which a filled-in default would change): the spec
fills them in. Code outside the
workflow (the one-process conversion, the calibration's trials, the command-line tools) reads
them from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stragglers.formats.datasets import TASK_TABLE_KINDS, known_kinds

MIN_TASKS = 100  # jobs with fewer tasks are skipped by the conversion (paper, Sec. 6)
PRODUCTION_PRIORITIES = (9, 10, 11)  # google-2011: the production jobs the paper keeps
LATENCY_DEFINITIONS = ("schedule_to_finish", "usage_windows")  # the first is the default
DEFAULT_SEED = 20220301  # the default config's seed, where the generator's fit is judged
SOURCES = ("generate", "local", "download")
MAX_PRIORITY = 11  # Google 2011's priorities are 0-11


def dataset_replay(replay: dict[str, Any], dataset: dict[str, Any]) -> dict[str, Any]:
    """A dataset's replay settings: the config's global `replay` section overlaid with the
    dataset's own `replay` (its grid, most often). The one place the two are merged: the
    workflow's rules, the calibration's trials and the benchmarks call it."""
    return {**replay, **dataset.get("replay", {})}


def plain_replay(replay: dict[str, Any]) -> dict[str, Any]:
    """The replay settings without their protocol and rule overrides: what a replay under a
    protocol of its own (the paper runs, the audit's variants, a calibration search) keeps."""
    return {k: v for k, v in replay.items() if k not in ("protocol", "overrides")}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset's settings as the stages use them (a rule's parameters keep the config's
    types: lists and dicts, which Snakemake compares between runs). `settings`: a copy of the
    entry with the defaults filled in (the raw layout reads its download and conversion
    sections)."""

    name: str
    kind: str
    source: str
    n_shards: int
    min_tasks: int
    production_priorities: list[int]
    latency_definition: str
    grid: dict[str, Any]  # the dataset's own `replay` section (its checkpoint grid)
    replay: dict[str, Any]  # the global `replay` section overlaid with `grid`
    generator: dict[str, Any]
    raw_dir: str | None
    sha256sum: str
    download: dict[str, Any] | None
    settings: dict[str, Any]

    @classmethod
    def from_config(
        cls,
        name: str,
        entry: dict[str, Any],
        replay: dict[str, Any] | None = None,
        where: str = "datasets",
    ) -> DatasetSpec:
        """The spec of dataset `name` from its config entry (`replay`: the config's global
        section), a missing setting at its default. `entry` is left as it is (a calibration
        search's fingerprint includes it). Raises ValueError naming
        `config <where>.<name>.<setting>`."""
        prefix = f"config {where}.{name}"
        if not isinstance(entry, dict):
            raise ValueError(f"{prefix}: a dataset's settings are a mapping, got {entry!r}")
        for setting in ("kind", "source", "n_shards"):
            if setting not in entry:
                raise ValueError(f"{prefix}: `{setting}` is required")
        kind, source, n_shards = entry["kind"], entry["source"], entry["n_shards"]
        if kind not in known_kinds():
            raise ValueError(
                f"{prefix}.kind: unknown dataset kind {kind!r}; known: {known_kinds()}"
            )
        if source not in SOURCES:
            raise ValueError(f"{prefix}.source: must be one of {list(SOURCES)}, got {source!r}")
        if kind in TASK_TABLE_KINDS and source != "local":
            raise ValueError(f"{prefix}.source: a {kind} dataset is read from a local folder")
        if not _is_int(n_shards) or n_shards < 1:
            raise ValueError(f"{prefix}.n_shards: must be an integer >= 1, got {n_shards!r}")
        entry = {
            "min_tasks": MIN_TASKS,
            "production_priorities": list(PRODUCTION_PRIORITIES),
            "latency_definition": LATENCY_DEFINITIONS[0],
            **entry,
        }
        min_tasks = entry["min_tasks"]
        if not _is_int(min_tasks) or min_tasks < 2:
            raise ValueError(f"{prefix}.min_tasks: must be an integer >= 2, got {min_tasks!r}")
        priorities = entry["production_priorities"]
        if (
            not isinstance(priorities, list)
            or not priorities
            or not all(_is_int(p) and 0 <= p <= MAX_PRIORITY for p in priorities)
        ):
            raise ValueError(
                f"{prefix}.production_priorities: must be a non-empty list of integers in "
                f"[0, {MAX_PRIORITY}], got {priorities!r}"
            )
        if entry["latency_definition"] not in LATENCY_DEFINITIONS:
            raise ValueError(
                f"{prefix}.latency_definition: must be one of {list(LATENCY_DEFINITIONS)}, "
                f"got {entry['latency_definition']!r}"
            )
        for section in ("replay", "generator", "download", "convert"):
            if not isinstance(entry.get(section, {}), dict):
                raise ValueError(f"{prefix}.{section}: must be a mapping, got {entry[section]!r}")
        required = {"local": "raw_dir", "download": "download"}.get(source)
        if required and required not in entry:
            raise ValueError(f"{prefix}.{required}: required with source {source}")
        return cls(
            name=name,
            kind=kind,
            source=source,
            n_shards=n_shards,
            min_tasks=min_tasks,
            production_priorities=priorities,
            latency_definition=entry["latency_definition"],
            grid=entry.get("replay", {}),
            replay=dataset_replay(replay or {}, entry),
            generator=entry.get("generator", {}),
            raw_dir=entry.get("raw_dir"),
            sha256sum=entry.get("sha256sum", ""),
            download=entry.get("download"),
            settings=entry,
        )


def dataset_specs(
    config: dict[str, Any], derived: dict[str, dict[str, Any]] | None = None
) -> dict[str, DatasetSpec]:
    """Every dataset's spec: the config's `datasets` and the `derived` ones (the replicate
    and sensitivity targets' datasets, named as sensitivity.derived_datasets names them; a
    placed dataset's errors name its `sensitivity.place` entry)."""
    replay = config.get("replay") or {}
    placed = (config.get("sensitivity") or {}).get("place") or {}
    entries = {
        **{name: (entry, "datasets") for name, entry in config["datasets"].items()},
        **{
            name: (entry, "sensitivity.place" if name in placed else "datasets")
            for name, entry in (derived or {}).items()
        },
    }
    return {
        name: DatasetSpec.from_config(name, entry, replay, where)
        for name, (entry, where) in entries.items()
    }
