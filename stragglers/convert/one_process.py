"""Each kind's whole conversion in one process (`convert_google`, `convert_alibaba`,
`convert_google_events`, any kind: `convert_dataset`; tests and small traces). Snakemake runs the same stages as separate
jobs instead (stragglers/convert/layout.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from stragglers.convert.alibaba import spill_alibaba
from stragglers.convert.common import (
    TASKS_FILE,
    _cleaning_up_on_failure,
    list_parts,
    optional_parts,
)
from stragglers.convert.gather import _convert_in_one_process
from stragglers.convert.google import (
    check_latency_definition,
    prepare_google,
    spill_google_usage,
)
from stragglers.convert.google_events import spill_google_events
from stragglers.formats.dataset_spec import MIN_TASKS, PRODUCTION_PRIORITIES


@_cleaning_up_on_failure
def convert_google(
    raw_dir: Path | str,
    out_dir: Path | str,
    *,
    dataset: str,
    n_shards: int,
    min_tasks: int = MIN_TASKS,
    priorities=PRODUCTION_PRIORITIES,
    latency_definition: str = "schedule_to_finish",
) -> dict[str, Any]:
    """`latency_definition`: "schedule_to_finish" (default: FINISH - first SCHEDULE) or
    "usage_windows" (the reference code's: the sum of the task's usage-window durations; the
    timeline, i.e. when the task finishes, stays the trace's)."""
    check_latency_definition(latency_definition)
    raw_dir, out_dir = Path(raw_dir), Path(out_dir)
    prepared = out_dir.with_name(out_dir.name + ".prepared")
    try:
        prepared_report = prepare_google(
            list_parts(raw_dir, "task_events"),
            prepared,
            dataset=dataset,
            n_shards=n_shards,
            min_tasks=min_tasks,
            priorities=priorities,
            machine_event_parts=optional_parts(raw_dir, "machine_events"),
        )
        return _convert_in_one_process(
            out_dir,
            "google-2011",
            dataset,
            n_shards,
            min_tasks,
            spill=lambda folder: spill_google_usage(
                list_parts(raw_dir, "task_usage"), prepared, folder, dataset=dataset
            ),
            tasks_path=prepared / TASKS_FILE,
            latency_definition=latency_definition,
            prepared_report=prepared_report,
        )
    finally:
        shutil.rmtree(prepared, ignore_errors=True)


@_cleaning_up_on_failure
def convert_alibaba(
    raw_dir: Path | str,
    out_dir: Path | str,
    *,
    dataset: str,
    n_shards: int,
    min_tasks: int = MIN_TASKS,
    kind: str = "alibaba-2018",
    bin_seconds: float = 60.0,
) -> dict[str, Any]:
    """One streaming pass: keep Terminated instances with end > start, spill them to one
    Parquet file per shard (a hash of the job id), then write each shard's jobs."""
    return _convert_in_one_process(
        Path(out_dir),
        kind,
        dataset,
        n_shards,
        min_tasks,
        spill=lambda folder: spill_alibaba(
            raw_dir, folder, dataset=dataset, n_shards=n_shards, kind=kind, bin_seconds=bin_seconds
        ),
    )


@_cleaning_up_on_failure
def convert_google_events(
    raw_dir: Path | str,
    out_dir: Path | str,
    *,
    dataset: str,
    n_shards: int,
    min_tasks: int = MIN_TASKS,
    priorities=PRODUCTION_PRIORITIES,
    grid_origin: float = 600.0,
    window_seconds: float = 300.0,
) -> dict[str, Any]:
    """The events-only conversion in one process (see `spill_google_events`)."""
    return _convert_in_one_process(
        Path(out_dir),
        "google-2011-events",
        dataset,
        n_shards,
        min_tasks,
        spill=lambda folder: spill_google_events(
            list_parts(Path(raw_dir), "task_events"),
            folder,
            dataset=dataset,
            n_shards=n_shards,
            min_tasks=min_tasks,
            priorities=priorities,
            grid_origin=grid_origin,
            window_seconds=window_seconds,
            machine_event_parts=optional_parts(Path(raw_dir), "machine_events"),
        ),
    )


CONVERTERS = {
    "google-2011": convert_google,
    "alibaba-2018": convert_alibaba,
    "alibaba-2017": convert_alibaba,
}

CONVERTERS["google-2011-events"] = convert_google_events


def convert_dataset(
    *,
    kind: str,
    raw_dir: str,
    out_dir: str,
    dataset: str,
    n_shards: int,
    min_tasks: int,
    priorities: list[int] | None = None,
    grid: dict[str, float] | None = None,
    latency_definition: str = "schedule_to_finish",
) -> dict:
    """Any kind's whole conversion in one process, settings as the dataset's config gives
    them (the scattered workflow's stages give the same files: tests/test_scatter.py)."""
    common = {"dataset": dataset, "n_shards": n_shards, "min_tasks": min_tasks}
    if kind == "google-2011":
        return convert_google(
            raw_dir,
            out_dir,
            **common,
            priorities=tuple(priorities or PRODUCTION_PRIORITIES),
            latency_definition=latency_definition,
        )
    if kind == "google-2011-events":
        grid = grid or {}
        return convert_google_events(
            raw_dir,
            out_dir,
            **common,
            priorities=tuple(priorities or PRODUCTION_PRIORITIES),
            grid_origin=float(grid.get("grid_origin", 600.0)),
            window_seconds=float(grid.get("checkpoint_interval", 300.0)),
        )
    if kind in ("alibaba-2018", "alibaba-2017"):
        return convert_alibaba(raw_dir, out_dir, **common, kind=kind)
    if kind == "tasks-table":
        from stragglers.convert.tasks_table import convert_tasks_table

        grid = grid or {}
        return convert_tasks_table(
            raw_dir,
            out_dir,
            **common,
            grid_origin=float(grid.get("grid_origin", 600.0)),
            window_seconds=float(grid.get("checkpoint_interval", 300.0)),
        )
    if kind == "nurd-timeseries":
        from stragglers.convert.nurd_timeseries import convert_nurd_timeseries

        return convert_nurd_timeseries(
            raw_dir, out_dir, **common, latency_definition=latency_definition
        )
    if kind == "spark-eventlog":
        from stragglers.convert.spark_eventlog import convert_spark_eventlog

        grid = grid or {}
        return convert_spark_eventlog(
            raw_dir,
            out_dir,
            **common,
            grid_origin=float(grid.get("grid_origin", 0.0)),
            window_seconds=float(grid.get("checkpoint_interval", 1.0)),
        )
    raise ValueError(f"no converter for dataset kind {kind!r}")
