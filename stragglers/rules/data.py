"""What the data rules call (workflow/rules/data.smk): generate or verify a raw trace, download
its files one job each, and its scattered conversion (prepare, part groups, shards, manifest;
the stages are in stragglers/convert/layout.py)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from stragglers.convert import layout
from stragglers.io import dump_json

log = logging.getLogger(__name__)


def generate_trace(
    *, raw: Path | str, dataset: str, kind: str, generator: dict[str, Any], seed: int
) -> dict:
    """Rule generate_trace: the synthetic trace of `kind` in its raw format, in folder `raw`;
    the generator's own seed defaults to the config's."""
    from stragglers.traces import generate

    settings = {"seed": seed, **generator}
    if kind == "google-2011":
        summary = generate.generate_google(raw, generate.GoogleGeneratorConfig.from_dict(settings))
    elif kind == "alibaba-2018":
        summary = generate.generate_alibaba(
            raw, generate.AlibabaGeneratorConfig.from_dict(settings)
        )
    else:
        raise ValueError(f"no generator for dataset kind {kind!r}")
    log.info("generated %s trace in %s: %s", kind, raw, summary)
    return summary


def verify_local_trace(*, verified: Path | str, dataset: str, raw_dir: str, sha256sum: str) -> dict:
    """Rule verify_local_trace: local raw parts checked against a SHA256SUM file before they
    are used; a mismatch stops the pipeline. The marker `verified` lists the files checked."""
    from stragglers.traces.download import check_local_copy

    if sha256sum:
        checked = check_local_copy(raw_dir, sha256sum)
        if not checked:
            raise FileNotFoundError(f"none of the files listed in {sha256sum} is under {raw_dir}")
        result = {"raw_dir": raw_dir, "sha256sum": sha256sum, "verified": checked}
    else:
        log.warning("no sha256sum given for %s: parts used unverified", raw_dir)
        result = {"raw_dir": raw_dir, "sha256sum": None, "verified": []}
    dump_json(result, verified)
    return result


def download_checksums(
    *, checksums: str, dataset: str, download: dict[str, Any], folder: str
) -> dict[str, Any]:
    """Rule download_checksums: the Google bucket's SHA256SUM, which every part is verified
    against (`checksums`: the marker listing what was fetched)."""
    return layout.download_checksums(download=dict(download), folder=folder, out=checksums)


def download_file(
    *,
    marker: str,
    dataset: str,
    file: str,
    kind: str,
    download: dict[str, Any],
    folder: str,
    checksums: str | None = None,
) -> dict[str, Any]:
    """Rule download_file: one raw file, verified (Google: against `checksums`, the bucket's
    SHA256SUM fetched first), resuming an interrupted transfer; `marker` records it."""
    return layout.download_file(
        kind=kind, download=dict(download), folder=folder, file=file, out=marker
    )


def download_trace(
    *, markers: list[str], done: str, dataset: str, kind: str, folder: str
) -> dict[str, Any]:
    """Rule download_trace: every file of a dataset fetched and verified (`done` lists them)."""
    return layout.download_done(kind=kind, folder=folder, markers=list(markers), out=done)


def convert_prepare(
    *,
    raw: list[str],
    prepared: str,
    dataset: str,
    raw_dir: str,
    event_parts: list[str],
    machine_event_parts: list[str],
    n_shards: int,
    min_tasks: int,
    priorities: list[int],
) -> dict[str, Any]:
    """Rule convert_prepare (google-2011): the task events of every part -> the kept tasks and
    their shards, in folder `prepared` (`raw`: the raw files, ordering only)."""
    return layout.prepare(
        raw_dir=raw_dir,
        event_parts=list(event_parts),
        out_dir=prepared,
        dataset=dataset,
        n_shards=n_shards,
        min_tasks=min_tasks,
        priorities=list(priorities),
        machine_event_parts=list(machine_event_parts),
    )


def convert_part(
    *,
    raw: list[str],
    spill: str,
    report: str,
    dataset: str,
    group: str,
    kind: str,
    raw_dir: str,
    parts: list[str],
    n_shards: int,
    min_tasks: int,
    priorities: list[int],
    grid: dict[str, float],
    machine_event_parts: list[str],
    configured_files: list[str],
    prepared: str | None = None,
) -> dict[str, Any]:
    """Rule convert_part: one group of raw parts (`parts`, group `group`) -> window rows
    spilled per shard in folder `spill`, and its `report`."""
    return layout.convert_part(
        kind=kind,
        raw_dir=raw_dir,
        parts=list(parts),
        out_dir=spill,
        out_report=report,
        dataset=dataset,
        n_shards=n_shards,
        min_tasks=min_tasks,
        priorities=list(priorities),
        grid=dict(grid),
        prepared_dir=prepared,
        machine_event_parts=list(machine_event_parts),
        configured_files=list(configured_files),
    )


def gather_shard(
    *,
    spills: list[str],
    jobs: str,
    manifest: str,
    report: str,
    dataset: str,
    shard: str,
    kind: str,
    min_tasks: int,
    latency_definition: str,
    prepared: str | None = None,
) -> dict[str, Any]:
    """Rule gather_shard: one shard's spilled rows from every part group -> its per-job files
    (folder `jobs`), its piece of the manifest and its report."""
    return layout.gather(
        kind=kind,
        spill_dirs=list(spills),
        shard=int(shard),
        jobs_dir=jobs,
        out_manifest=manifest,
        out_report=report,
        dataset=dataset,
        min_tasks=min_tasks,
        latency_definition=latency_definition,
        prepared_dir=prepared,
    )


def convert_manifest(
    *,
    stage_reports: list[str],
    shard_manifests: list[str],
    shard_reports: list[str],
    manifest: str,
    report: str,
    dataset: str,
    kind: str,
) -> dict[str, Any]:
    """Rule convert_manifest: the shards' pieces and every stage's report -> the dataset's
    `manifest` and `report` (report.json, in the same folder)."""
    return layout.manifest(
        kind=kind,
        dataset=dataset,
        shard_manifests=list(shard_manifests),
        shard_reports=list(shard_reports),
        stage_reports=list(stage_reports),
        out_dir=str(Path(manifest).parent),
    )
