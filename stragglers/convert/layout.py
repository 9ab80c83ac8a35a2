"""How a dataset's download and conversion are scattered over Snakemake jobs: the raw files the
DAG must know when it is built (a generator's parts, a download's selection, a local folder's
parts), one download job per file, and the conversion's stages (convert_prepare, one
convert_part per group of parts, one gather_shard per shard, convert_manifest), which
stragglers/rules/data.py calls. docs/definitions.md ("Conversion as scatter-gather") and
docs/download.md describe them. The converters are imported inside the functions, so that
building the DAG, which calls `raw_layout`, does not pay for them.
"""

from __future__ import annotations

import functools
import json
import logging
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stragglers.formats.datasets import TASK_TABLE_KINDS
from stragglers.formats.raw import GOOGLE_MACHINE_EVENTS_PART, google_part_name
from stragglers.io import dump_json, write_parquet_atomic

log = logging.getLogger(__name__)

ALIBABA_KINDS = ("alibaba-2018", "alibaba-2017")
ALIBABA_ARCHIVES = {
    "alibaba-2018": "batch_instance.tar.gz",
    "alibaba-2017": "alibaba-trace-2017.tar.gz",
}
# the machine tables a download fetches beside the batch_instance archive (same folder of the
# server), table -> (archive, the download setting holding its SHA-256); 2017's are not converted
ALIBABA_MACHINE_ARCHIVES = {
    "alibaba-2018": {
        "machine_meta": ("machine_meta.tar.gz", "machine_meta_sha256"),
        "machine_usage": ("machine_usage.tar.gz", "machine_usage_sha256"),
    },
}
TASK_TABLE_KIND = (
    "tasks-table"  # a folder with tasks.* and usage.* (stragglers/formats/tasks_table.py)
)
SPARK_KIND = "spark-eventlog"  # a folder of Spark event logs (stragglers/convert/spark_eventlog.py)
# the NURD authors' <job>/<task index> files, or .tar.gz archives of them (convert/nurd_timeseries.py)
NURD_KIND = "nurd-timeseries"
GOOGLE_TABLES_NEEDED = {
    "google-2011": ["task_events", "task_usage"],
    "google-2011-events": ["task_events"],
}


@dataclass
class RawLayout:
    """The raw files of one dataset, relative to its raw folder, known before anything runs."""

    kind: str
    # table -> part paths (Google, machine_events included); Alibaba: {"batch_instance":
    # [archive]}, plus {"machine_meta": [archive], "machine_usage": [archive]} when downloaded
    tables: dict[str, list[str]]
    parts_per_job: int = 1

    @functools.cached_property
    def groups(self) -> list[list[str]]:
        """The files of each `convert_part` job, in part order."""
        if self.kind == "google-2011":
            usage = self.tables["task_usage"]
            return [
                usage[i : i + self.parts_per_job] for i in range(0, len(usage), self.parts_per_job)
            ]
        if self.kind == "google-2011-events":
            return [self.tables["task_events"]]
        if self.kind == TASK_TABLE_KIND:
            return [self.tables["tasks"]]
        if self.kind == SPARK_KIND:
            return [self.tables["eventlogs"]]
        if self.kind == NURD_KIND:
            return [self.tables["jobs"]]
        return [self.tables["batch_instance"]]

    @functools.cached_property
    def files(self) -> list[str]:
        return [path for paths in self.tables.values() for path in paths]

    @functools.cached_property
    def machine_files(self) -> list[str]:
        """The machine tables' files (Google machine_events, Alibaba machine_meta/usage)."""
        names = ["machine_events", *ALIBABA_MACHINE_ARCHIVES.get(self.kind, {})]
        return [path for name in names for path in self.tables.get(name, [])]

    def group_inputs(self, group: int) -> list[str]:
        """The files one `convert_part` job reads: its group, and the machine tables for the
        kinds whose part stage reads them (google-2011-events, Alibaba); google-2011 reads
        machine_events in `convert_prepare`."""
        files = self.groups[group]
        if self.kind == "google-2011-events" or self.kind in ALIBABA_KINDS:
            files = files + self.machine_files
        if self.kind == TASK_TABLE_KIND:
            files = files + self.tables.get("usage", [])
        return files


def raw_layout(kind: str, dataset_config: dict[str, Any], raw_dir: str | None) -> RawLayout:
    """The raw files a dataset will have, from its config (and, for `local`, its folder)."""
    source = dataset_config["source"]
    parts_per_job = int((dataset_config.get("convert") or {}).get("parts_per_job", 1))
    if kind == TASK_TABLE_KIND:
        return RawLayout(kind, task_table_files(source, raw_dir), parts_per_job)
    if kind == SPARK_KIND:
        from stragglers.convert.spark_eventlog import event_log_entries

        _local_only(kind, source, "a folder of event logs")
        return RawLayout(kind, {"eventlogs": event_log_entries(raw_dir)}, parts_per_job)
    if kind == NURD_KIND:
        from stragglers.convert.nurd_timeseries import raw_entries

        _local_only(kind, source, "a folder of <job>/<task index> files or archives of them")
        return RawLayout(kind, {"jobs": raw_entries(raw_dir)}, parts_per_job)
    if kind in ALIBABA_KINDS:
        # one part: the table inside the tarball (or an extracted CSV found at run time); a
        # download lists every archive it fetches (the machine tables' too)
        if source == "download":
            tables = {
                table: [archive]
                for table, (archive, _, _) in alibaba_downloads(
                    kind, dataset_config["download"]
                ).items()
            }
            return RawLayout(kind, tables, parts_per_job)
        return RawLayout(kind, {"batch_instance": [ALIBABA_ARCHIVES[kind]]}, parts_per_job)
    if kind not in GOOGLE_TABLES_NEEDED:
        raise ValueError(f"no conversion for dataset kind {kind!r}")
    tables: dict[str, list[str]] = {
        "machine_events": _machine_event_parts(
            source, raw_dir, dataset_config.get("download") or {}
        )
    }
    for table in GOOGLE_TABLES_NEEDED[kind]:
        if source == "generate":
            from stragglers.traces.generate import GoogleGeneratorConfig

            n_parts = GoogleGeneratorConfig.from_dict(dataset_config.get("generator", {})).n_parts
            tables[table] = [f"{table}/{google_part_name(p, n_parts)}" for p in range(n_parts)]
        elif source == "download":
            from stragglers.traces import download as fetch

            spec = dataset_config["download"]
            total = int(spec.get("parts_per_table", fetch.GOOGLE_PARTS_PER_TABLE))
            tables[table] = [
                fetch.google_part_relpath(table, index, total)
                for index in fetch.select_parts(spec["parts"], total, setting="download.parts")
            ]
        else:
            from stragglers.convert.common import list_parts

            tables[table] = [
                str(path.relative_to(raw_dir)) for path in list_parts(Path(raw_dir), table)
            ]
    return RawLayout(kind, tables, parts_per_job)


def task_table_files(source: str, raw_dir: str | None) -> dict[str, list[str]]:
    """A task table's files, found when the DAG is built: `tasks` (one of tasks.csv,
    tasks.csv.gz, tasks.parquet) and the optional `usage`; a missing tasks table or two
    versions of one are errors naming the folder, before anything runs."""
    _local_only(TASK_TABLE_KIND, source, "a task table")
    from stragglers.formats.tasks_table import find_table

    tables = {"tasks": [find_table(raw_dir, "tasks").name]}
    usage = find_table(raw_dir, "usage", required=False)
    if usage is not None:
        tables["usage"] = [usage.name]
    return tables


def _local_only(kind: str, source: str, what: str) -> None:
    if source != "local":
        raise ValueError(
            f"dataset kind {kind}: {what} is read from a folder (source: local, raw_dir: "
            f"<folder>), not source: {source}"
        )


def machine_tables_wanted(download: dict[str, Any]) -> bool:
    """`download.machine_tables` (default true): fetch the machine tables with the trace."""
    value = download.get("machine_tables", True)
    if not isinstance(value, bool):
        raise ValueError(f"download.machine_tables: expected true or false, got {value!r}")
    return value


def alibaba_downloads(kind: str, download: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    """table -> (archive, url, sha256) of every archive an Alibaba download fetches: the
    batch_instance archive (`download.url`, `download.sha256`) and, with
    `download.machine_tables` (default true) for 2018, machine_meta.tar.gz and
    machine_usage.tar.gz from the same folder of the server, each verified against its
    `download.<table>_sha256`. A missing setting is a ValueError naming it."""
    from stragglers.traces.download import normalise_sha256

    missing = [key for key in ("url", "sha256") if key not in download]
    if missing:
        raise ValueError(f"download: {kind} needs {missing} (the archive's URL and SHA-256)")
    files = {
        "batch_instance": (
            ALIBABA_ARCHIVES[kind],
            str(download["url"]),
            normalise_sha256(download["sha256"], "download.sha256"),
        )
    }
    if not machine_tables_wanted(download):
        return files
    for table, (archive, setting) in ALIBABA_MACHINE_ARCHIVES.get(kind, {}).items():
        if setting not in download:
            raise ValueError(
                f"download.{setting}: {kind} also downloads {archive} (the machine state's "
                f"{table} table) and needs its SHA-256 to verify it; set download.{setting}, or "
                f"download.machine_tables: false to go without the machine tables"
            )
        # urljoin replaces the last path segment: .../v2018Traces/batch_instance.tar.gz ->
        # .../v2018Traces/machine_meta.tar.gz
        files[table] = (
            archive,
            urllib.parse.urljoin(str(download["url"]), archive),
            normalise_sha256(download[setting], f"download.{setting}"),
        )
    return files


def _machine_event_parts(source: str, raw_dir: str | None, download: dict[str, Any]) -> list[str]:
    """machine_events gives the machines' capacities; the conversion does without it (the
    capacities stay unknown and the report says so). Generated traces write it; a local
    folder is used if it has it; a download fetches its one part (verified against the
    bucket's SHA256SUM) unless `download.machine_tables` is false."""
    if source == "generate":
        return [GOOGLE_MACHINE_EVENTS_PART]
    if source == "download":
        return [GOOGLE_MACHINE_EVENTS_PART] if machine_tables_wanted(download) else []
    if source == "local" and raw_dir is not None:
        from stragglers.convert.common import optional_parts

        return [
            str(path.relative_to(raw_dir))
            for path in optional_parts(Path(raw_dir), "machine_events")
        ]
    return []


def check_parts_present(raw_dir: str | Path, parts: list[str]) -> list[Path]:
    """The absolute paths of `parts`; a missing one is an error (the DAG was built for it).
    For a Google table the folder must not hold other parts either (they would be ignored)."""
    paths = [Path(raw_dir) / part for part in parts]
    missing = [str(path) for path in paths if not path.exists()]
    if missing:
        raise FileNotFoundError(f"raw parts missing (the workflow expected them): {missing[:5]}")
    return paths


def _google_parts(
    raw_dir: str | Path, parts: list[str], table: str, configured: list[str] | None = None
) -> list[Path]:
    """Parts of `table` as the DAG listed them; parts in the folder that the configuration
    does not list at all (`configured`: every raw file of the dataset, the other conversion
    groups' parts too; e.g. parts left by an earlier, larger download selection) are not used,
    and said so."""
    from stragglers.convert.common import list_parts

    listed = check_parts_present(raw_dir, parts)
    known = {str(Path(raw_dir) / name) for name in configured or ()} | set(map(str, listed))
    present = list_parts(Path(raw_dir), table)
    extra = sorted(set(map(str, present)) - known)
    if extra:
        log.warning(
            "%d %s part(s) in %s are not in this configuration and are not converted: %s",
            len(extra),
            table,
            raw_dir,
            extra[:3],
        )
    return listed


# ---------------------------------------------------------------------------------------------
# conversion stages (one Snakemake job each)
def prepare(
    *,
    raw_dir: str,
    event_parts: list[str],
    out_dir: str,
    dataset: str,
    n_shards: int,
    min_tasks: int,
    priorities: list[int],
    machine_event_parts: list[str] = (),
) -> dict[str, Any]:
    from stragglers.convert.google import prepare_google

    return prepare_google(
        _google_parts(raw_dir, event_parts, "task_events"),
        out_dir,
        dataset=dataset,
        n_shards=n_shards,
        min_tasks=min_tasks,
        priorities=tuple(priorities),
        machine_event_parts=check_parts_present(raw_dir, list(machine_event_parts)),
    )


def convert_part(
    *,
    kind: str,
    raw_dir: str,
    parts: list[str],
    out_dir: str,
    out_report: str,
    dataset: str,
    n_shards: int,
    min_tasks: int,
    priorities: list[int],
    grid: dict[str, float],
    prepared_dir: str | None = None,
    machine_event_parts: list[str] = (),
    configured_files: list[str] = (),
) -> dict[str, Any]:
    """One group of raw parts -> its spill folder (and a copy of its report).
    `configured_files`: every raw file of the dataset (the other groups' parts are not extra)."""
    from stragglers.convert.alibaba import spill_alibaba
    from stragglers.convert.google import spill_google_usage
    from stragglers.convert.google_events import spill_google_events
    from stragglers.convert.tasks_table import spill_tasks_table

    if kind == "google-2011":
        report = spill_google_usage(
            _google_parts(raw_dir, parts, "task_usage", list(configured_files)),
            prepared_dir,
            out_dir,
            dataset=dataset,
        )
    elif kind == "google-2011-events":
        report = spill_google_events(
            _google_parts(raw_dir, parts, "task_events"),
            out_dir,
            dataset=dataset,
            n_shards=n_shards,
            min_tasks=min_tasks,
            priorities=tuple(priorities),
            grid_origin=float(grid.get("grid_origin", 600.0)),
            window_seconds=float(grid.get("checkpoint_interval", 300.0)),
            machine_event_parts=check_parts_present(raw_dir, list(machine_event_parts)),
        )
    elif kind == TASK_TABLE_KIND:
        check_parts_present(raw_dir, parts)
        report = spill_tasks_table(
            raw_dir,
            out_dir,
            dataset=dataset,
            n_shards=n_shards,
            min_tasks=min_tasks,
            grid_origin=float(grid.get("grid_origin", 600.0)),
            window_seconds=float(grid.get("checkpoint_interval", 300.0)),
        )
    elif kind == SPARK_KIND:
        from stragglers.convert.spark_eventlog import spill_spark_eventlog

        report = spill_spark_eventlog(
            check_parts_present(raw_dir, parts),
            out_dir,
            dataset=dataset,
            n_shards=n_shards,
            min_tasks=min_tasks,
            grid_origin=float(grid.get("grid_origin", 0.0)),
            window_seconds=float(grid.get("checkpoint_interval", 1.0)),
        )
    elif kind == NURD_KIND:
        from stragglers.convert.nurd_timeseries import spill_nurd_timeseries

        check_parts_present(raw_dir, parts)
        report = spill_nurd_timeseries(
            raw_dir, list(parts), out_dir, dataset=dataset, n_shards=n_shards, min_tasks=min_tasks
        )
    elif kind in ALIBABA_KINDS:
        report = spill_alibaba(
            raw_dir,
            out_dir,
            dataset=dataset,
            n_shards=n_shards,
            kind=kind,
            bin_seconds=float(grid.get("checkpoint_interval", 60.0)),
        )
    else:
        raise ValueError(f"no conversion for dataset kind {kind!r}")
    dump_json(report, out_report)
    return report


def gather(
    *,
    kind: str,
    spill_dirs: list[str],
    shard: int,
    jobs_dir: str,
    out_manifest: str,
    out_report: str,
    dataset: str,
    min_tasks: int,
    latency_definition: str,
    prepared_dir: str | None = None,
) -> dict[str, Any]:
    """One shard: every group's spilled rows -> its job files, manifest piece and report."""
    from stragglers.convert.common import TASKS_FILE
    from stragglers.convert.gather import gather_shard
    from stragglers.convert.google import check_latency_definition

    check_latency_definition(latency_definition)
    tasks_path = None
    if kind == "google-2011":
        tasks_path = Path(prepared_dir) / TASKS_FILE
    elif kind == "google-2011-events" or kind in TASK_TABLE_KINDS:
        tasks_path = Path(spill_dirs[0]) / TASKS_FILE
    manifest, report = gather_shard(
        [Path(p) for p in spill_dirs],
        shard,
        jobs_dir,
        kind=kind,
        dataset=dataset,
        min_tasks=min_tasks,
        tasks_path=tasks_path,
        latency_definition=latency_definition,
    )
    write_parquet_atomic(manifest, out_manifest)
    dump_json(report, out_report)
    return report


def manifest(
    *,
    kind: str,
    dataset: str,
    shard_manifests: list[str],
    shard_reports: list[str],
    stage_reports: list[str],
    out_dir: str,
) -> dict[str, Any]:
    """Stage reports (prepare, then part groups, in order) and the shards' pieces (in shard
    order) -> manifest.parquet and report.json."""
    import pandas as pd

    from stragglers.convert.common import REPORT_FILE, read_report, write_manifest

    # the prepare stage's report is inside its folder
    stage_reports = [Path(p) / REPORT_FILE if Path(p).is_dir() else Path(p) for p in stage_reports]
    reports = [read_report(p) for p in [*stage_reports, *shard_reports]]
    manifests = [pd.read_parquet(p) for p in shard_manifests]
    return write_manifest(out_dir, manifests, reports, kind=kind, dataset=dataset)


# ---------------------------------------------------------------------------------------------
# downloads (one Snakemake job per file)
def download_checksums(*, download: dict[str, Any], folder: str, out: str) -> dict[str, Any]:
    """The Google bucket's SHA256SUM (and schema.csv, verified, when it is listed)."""
    from stragglers.traces import download as fetch

    base_url = download.get("base_url", fetch.GOOGLE_BASE_URL).rstrip("/")
    sums_path = fetch.download(
        f"{base_url}/{fetch.GOOGLE_SHA256SUM_NAME}", Path(folder) / fetch.GOOGLE_SHA256SUM_NAME
    )
    sums = fetch.parse_sha256sum(sums_path.read_text(), source=str(sums_path))
    files = [str(sums_path)]
    if fetch.GOOGLE_SCHEMA_NAME in sums:
        files.append(
            str(
                fetch.download(
                    f"{base_url}/{fetch.GOOGLE_SCHEMA_NAME}",
                    Path(folder) / fetch.GOOGLE_SCHEMA_NAME,
                    sha256=sums[fetch.GOOGLE_SCHEMA_NAME],
                )
            )
        )
    result = {"files": files, "entries": len(sums)}
    dump_json(result, out)
    return result


def download_file(
    *, kind: str, download: dict[str, Any], folder: str, file: str, out: str
) -> dict[str, Any]:
    """One raw file, resumable, moved into place only once its SHA-256 matches (Google: the
    bucket's SHA256SUM, fetched by `download_checksums`; Alibaba: the config's `sha256`, or
    `machine_meta_sha256` / `machine_usage_sha256` for the machine tables)."""
    from stragglers.traces import download as fetch

    folder_path = Path(folder)
    if kind in ALIBABA_KINDS:
        archives = {
            archive: (url, sha256)
            for archive, url, sha256 in alibaba_downloads(kind, download).values()
        }
        if file not in archives:
            raise ValueError(
                f"{file}: not one of the files a {kind} download fetches ({sorted(archives)})"
            )
        url, sha256 = archives[file]
        path = fetch.download(url, folder_path / file, sha256=sha256)
    else:
        sums_path = folder_path / fetch.GOOGLE_SHA256SUM_NAME
        sums = fetch.parse_sha256sum(sums_path.read_text(), source=str(sums_path))
        if file not in sums:
            hint = (
                " (download.machine_tables: false goes without the machine tables)"
                if file == GOOGLE_MACHINE_EVENTS_PART
                else ""
            )
            raise fetch.DownloadError(
                f"{file}: no entry in {sums_path}, refusing an unverifiable download{hint}"
            )
        base_url = download.get("base_url", fetch.GOOGLE_BASE_URL).rstrip("/")
        path = fetch.download(f"{base_url}/{file}", folder_path / file, sha256=sums[file])
    result = {"file": str(path), "bytes": path.stat().st_size}
    dump_json(result, out)
    return result


def download_done(*, kind: str, folder: str, markers: list[str], out: str) -> dict[str, Any]:
    """Every file of a dataset fetched and verified: the marker the conversion waits for."""
    files = [json.loads(Path(m).read_text())["file"] for m in markers]
    result = {"kind": kind, "folder": folder, "files": files}
    dump_json(result, out)
    return result


def download_dataset(*, kind: str, download: dict[str, Any], folder: str, out: str) -> dict:
    """Fetch what a dataset needs into `folder` in one process, every file verified before it
    is kept (with `download.machine_tables`, default true, the machine tables too). The
    workflow fetches the same files one job each (download_checksums, download_file)."""
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
