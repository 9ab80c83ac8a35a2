"""What the data rules call: generate, download or verify a raw trace, and convert it in one
process (workflow/rules/data.smk).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from stragglers.convert.layout import (
    ALIBABA_ARCHIVES,
    GOOGLE_TABLES_NEEDED,
    alibaba_downloads,
    machine_tables_wanted,
)
from stragglers.io import dump_json

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# data
def generate_trace(*, kind: str, out_dir: Path | str, generator: dict[str, Any], seed: int) -> dict:
    """Write the synthetic trace of `kind`; the generator's own seed defaults to the config's."""
    from stragglers.traces import generate

    settings = {"seed": seed, **generator}
    if kind == "google-2011":
        summary = generate.generate_google(
            out_dir, generate.GoogleGeneratorConfig.from_dict(settings)
        )
    elif kind == "alibaba-2018":
        summary = generate.generate_alibaba(
            out_dir, generate.AlibabaGeneratorConfig.from_dict(settings)
        )
    else:
        raise ValueError(f"no generator for dataset kind {kind!r}")
    log.info("generated %s trace in %s: %s", kind, out_dir, summary)
    return summary


def download_trace(*, kind: str, download: dict[str, Any], folder: str, out: str) -> dict:
    """Fetch what a dataset needs into `folder`, every file verified before it is kept (with
    `download.machine_tables`, default true, the machine tables too)."""
    from stragglers.traces import download as fetch

    if kind in GOOGLE_TABLES_NEEDED:
        if "parts" not in download:
            raise ValueError('download.parts: which Google parts to fetch (e.g. "0-4" or "all")')
        tables = list(GOOGLE_TABLES_NEEDED[kind])
        if machine_tables_wanted(download):
            tables.append("machine_events")
        paths = fetch.download_google(
            folder,
            tables,
            download["parts"],
            base_url=download.get("base_url", fetch.GOOGLE_BASE_URL),
            total=int(download.get("parts_per_table", fetch.GOOGLE_PARTS_PER_TABLE)),
        )
    elif kind in ALIBABA_ARCHIVES:
        paths = [
            fetch.download(url, Path(folder) / archive, sha256=sha256)
            for archive, url, sha256 in alibaba_downloads(kind, download).values()
        ]
    else:
        raise ValueError(f"no download for dataset kind {kind!r}")
    result = {"kind": kind, "folder": folder, "files": [str(p) for p in paths]}
    dump_json(result, out)
    return result


def verify_local_trace(*, raw_dir: str, sha256sum: str, out: Path | str) -> dict:
    """Verify local raw parts against a SHA256SUM file; a mismatch stops the pipeline."""
    from stragglers.traces.download import check_local_copy

    if sha256sum:
        verified = check_local_copy(raw_dir, sha256sum)
        if not verified:
            raise FileNotFoundError(f"none of the files listed in {sha256sum} is under {raw_dir}")
        result = {"raw_dir": raw_dir, "sha256sum": sha256sum, "verified": verified}
    else:
        log.warning("no sha256sum given for %s: parts used unverified", raw_dir)
        result = {"raw_dir": raw_dir, "sha256sum": None, "verified": []}
    dump_json(result, out)
    return result


def convert_trace(
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
    from stragglers.convert.one_process import (
        convert_alibaba,
        convert_google,
        convert_google_events,
    )

    common = {"dataset": dataset, "n_shards": n_shards, "min_tasks": min_tasks}
    if kind == "google-2011":
        return convert_google(
            raw_dir,
            out_dir,
            **common,
            priorities=tuple(priorities or (9, 10, 11)),
            latency_definition=latency_definition,
        )
    if kind == "google-2011-events":
        grid = grid or {}
        return convert_google_events(
            raw_dir,
            out_dir,
            **common,
            priorities=tuple(priorities or (9, 10, 11)),
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
