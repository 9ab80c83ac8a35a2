"""The NURD authors' per-task layout (dataset kind `nurd-timeseries`) -> a task table, which the
task table's own stage converts (stragglers/convert/tasks_table.py), and back.

The layout is what the authors' released scripts read (`run_ts.py --data_path DIR --jobid JOB`)
and what their data scripts extract from Google clusterdata-2011-2: a folder per job, in it one
headerless CSV per task named by its task index (0 .. n-1), one row per task_usage window in
time order, 22 columns: the 20 task_usage columns in the trace's order (times in microseconds)
then EV and FL, the task's EVICT and FAIL events counted in the first window that ends after
each event (their data/timeseriestotal.py). A raw folder holds job folders, or `.tar.gz`
archives of them.

How the rows become attempts and windows (docs/your-own-trace.md, "The NURD authors' layout"):
- a window is kept as it is (not cut to a grid); its measures are the 13 usage columns of the
  paper's Table 1, under the google-2011 kind's column names;
- EV / FL become running totals (evictions_so_far, failures_so_far): the sum of the counts of
  the task's rows up to and including this one, in file order;
- a task's attempts are its runs on one machine: a window continues the run of its machine
  when it starts where that run's last window ended (the trace's windows of one process tile
  its life), else it opens a new attempt. The attempt whose run ends last is the finished one;
  the k-th EVICT or FAIL event of the task (file order) ends its k-th attempt (`evicted` /
  `failed`), an attempt left without an event ended `lost` (the file does not say why);
- windows of two attempts may overlap in time (the old machine still reports after the task
  started elsewhere): both are kept, counted in the report;
- a job file numbers its tasks by task index (the order in which the scripts read the files
  and break ties), not by start as the other kinds do.
"""

from __future__ import annotations

import io
import logging
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stragglers.convert.common import ConversionReport, _cleaning_up_on_failure
from stragglers.formats import tasks_table as table_format
from stragglers.formats.dataset_spec import MIN_TASKS
from stragglers.formats.datasets import (
    EVICTIONS_SO_FAR,
    FAILURES_SO_FAR,
    GOOGLE_FEATURES,
    SCRIPT_COLUMNS,
    SCRIPT_LAYOUT,
)

log = logging.getLogger(__name__)

KIND = "nurd-timeseries"
ARCHIVE_SUFFIX = ".tar.gz"
US = 1e6  # the trace's timestamps are microseconds
# the 13 usage measures of the paper's Table 1, in the google-2011 kind's order and names
MEASURES = [
    f.column for f in GOOGLE_FEATURES if f.column not in (EVICTIONS_SO_FAR, FAILURES_SO_FAR)
]
COLUMN_OF = {SCRIPT_COLUMNS[c]: c for c in MEASURES}  # layout name (MCU...) -> our column
INTEGER_COLUMNS = ("ST", "ET", "TI", "EV", "FL")  # never empty: times and counts


class NurdTimeseriesError(ValueError):
    """Bad input in the authors' layout: the message names the file, the row and the column."""


@dataclass
class TaskFile:
    job: str
    task: int
    name: str  # as errors name it: the path, or archive:member
    text: str


def raw_entries(raw_dir: Path | str) -> list[str]:
    """The raw folder's entries the conversion reads, known when the DAG is built: its
    `.tar.gz` archives, else its job folders (names relative to `raw_dir`). None is an
    error naming the folder."""
    raw_dir = Path(raw_dir)
    if not raw_dir.is_dir():
        raise NurdTimeseriesError(f"{raw_dir}: not a folder (raw_dir of a {KIND} dataset)")
    archives = sorted(p.name for p in raw_dir.glob(f"*{ARCHIVE_SUFFIX}"))
    if archives:
        return archives
    jobs = sorted(p.name for p in raw_dir.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not jobs:
        raise NurdTimeseriesError(
            f"{raw_dir}: no job folder (<job>/<task index>) and no {ARCHIVE_SUFFIX} archive of them"
        )
    return jobs


def _task_index(job: str, name: str, where: str) -> int:
    if not name.isdigit():
        raise NurdTimeseriesError(
            f"{where}: a task file of job {job} must be named by its task index (0, 1, ...), "
            f"not {name!r}"
        )
    return int(name)


def _files_of_folder(folder: Path) -> list[TaskFile]:
    files = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue
        if not path.is_file():
            raise NurdTimeseriesError(f"{path}: expected a task file, found a folder")
        files.append(
            TaskFile(
                folder.name,
                _task_index(folder.name, path.name, str(path)),
                str(path),
                path.read_text(),
            )
        )
    return files


def _files_of_archive(path: Path) -> list[TaskFile]:
    """Every task file of the archive: members `[prefix/]<job>/<task index>`."""
    files = []
    try:
        with tarfile.open(path, "r:gz") as archive:
            for member in archive:
                if not member.isfile():
                    continue
                parts = Path(member.name).parts
                if any(part.startswith(".") for part in parts):
                    continue
                where = f"{path}:{member.name}"
                if len(parts) < 2:
                    raise NurdTimeseriesError(f"{where}: expected <job>/<task index>")
                job = parts[-2]
                text = archive.extractfile(member).read().decode()
                files.append(TaskFile(job, _task_index(job, parts[-1], where), where, text))
    except (tarfile.TarError, OSError, EOFError) as error:
        raise NurdTimeseriesError(
            f"{path}: cannot be read ({type(error).__name__}: {error})"
        ) from None
    return files


def read_files(raw_dir: Path | str, entries: list[str] | None = None) -> list[TaskFile]:
    """The task files of `entries` (archives or job folders of `raw_dir`; default: all), by
    job then task index. A job whose task indices are not 0 .. n-1, or a task given twice, is an
    error naming the job."""
    raw_dir = Path(raw_dir)
    files: list[TaskFile] = []
    for entry in entries if entries is not None else raw_entries(raw_dir):
        path = raw_dir / entry
        files.extend(
            _files_of_archive(path) if entry.endswith(ARCHIVE_SUFFIX) else _files_of_folder(path)
        )
    files.sort(key=lambda f: (f.job, f.task))
    by_job: dict[str, list[int]] = {}
    for f in files:
        by_job.setdefault(f.job, []).append(f.task)
    for job, indices in by_job.items():
        if len(set(indices)) != len(indices):
            twice = sorted({i for i in indices if indices.count(i) > 1})[0]
            raise NurdTimeseriesError(f"{raw_dir}: job {job}: task index {twice} is given twice")
        missing = sorted(set(range(max(indices) + 1)) - set(indices))
        if missing:
            raise NurdTimeseriesError(
                f"{raw_dir}: job {job}: task index {missing[0]} is missing ({len(missing)} of "
                f"0..{max(indices)}; the authors' scripts read files 0 .. n-1)"
            )
    return files


def parse_rows(files: list[TaskFile]) -> pd.DataFrame:
    """Every row of every file as numbers, in the layout's columns (SCRIPT_LAYOUT, JI aside),
    with `job` and `task` (index). A row with
    the wrong number of fields, text where a number belongs, an empty time, EV / FL that are
    not counts, a window ending before it starts, or a job / task index column that is not its
    file's, is an error naming the file, the row and the column."""
    lines, file_of, row_of = [], [], []
    width = len(SCRIPT_LAYOUT)
    for position, f in enumerate(files):
        rows = f.text.splitlines()
        for number, line in enumerate(rows, start=1):
            fields = line.count(",") + 1
            if fields != width:
                raise NurdTimeseriesError(
                    f"{f.name}: row {number}: {fields} fields, the layout has {width} "
                    f"({', '.join(SCRIPT_LAYOUT)})"
                )
        lines.extend(rows)
        file_of.extend([position] * len(rows))
        row_of.extend(range(1, len(rows) + 1))
    text = (
        pd.read_csv(
            io.StringIO("\n".join(lines)),
            header=None,
            names=list(SCRIPT_LAYOUT),
            dtype=str,
            keep_default_na=False,
            na_values=[""],
        )
        if lines
        else pd.DataFrame(columns=list(SCRIPT_LAYOUT), dtype=str)
    )
    file_of, row_of = np.asarray(file_of, dtype=np.int64), np.asarray(row_of, dtype=np.int64)

    def fail(bad: np.ndarray, column: str, why) -> None:
        at = np.flatnonzero(bad)
        if len(at):
            i = at[0]
            more = f" ({len(at)} rows like it)" if len(at) > 1 else ""
            raise NurdTimeseriesError(
                f"{files[file_of[i]].name}: row {row_of[i]}, column {SCRIPT_LAYOUT.index(column) + 1} "
                f"({column}): {why(i)}{more}"
            )

    rows = pd.DataFrame(index=text.index)
    for column in SCRIPT_LAYOUT:
        if column == "JI":
            continue  # the job id is compared as text with the file's folder
        raw = text[column]
        values = pd.to_numeric(raw.str.strip(), errors="coerce")
        fail(
            (raw.notna() & values.isna()).to_numpy(),
            column,
            lambda i, raw=raw: f"{raw.iloc[i]!r} is not a number",
        )
        rows[column] = values.to_numpy(np.float64)
    for column in INTEGER_COLUMNS:
        fail(np.isnan(rows[column].to_numpy()), column, lambda i: "empty")
    for column in INTEGER_COLUMNS:
        values = rows[column].to_numpy()
        fail(
            (values != np.floor(values)) | (values < 0),
            column,
            lambda i, values=values: f"{values[i]:g} is not a non-negative integer",
        )
    start, end = rows["ST"].to_numpy(), rows["ET"].to_numpy()
    fail(
        end < start,
        "ET",
        lambda i: f"the window ends ({end[i]:.0f}) before it starts ({start[i]:.0f})",
    )
    task_index = np.array([f.task for f in files], dtype=np.int64)[file_of]
    fail(
        rows["TI"].to_numpy() != task_index,
        "TI",
        lambda i: f"task index {rows['TI'].iloc[i]:.0f}, but the file is task {task_index[i]}",
    )
    jobs = np.array([f.job for f in files], dtype=object)[file_of]
    written = text["JI"].fillna("").str.strip().to_numpy(dtype=object)
    fail(
        written != jobs, "JI", lambda i: f"job {written[i]!r}, but the file is in folder {jobs[i]}"
    )
    rows["job"] = jobs
    rows["task"] = task_index
    return rows


def attempts_of(
    rows: pd.DataFrame, key: np.ndarray, report: ConversionReport
) -> tuple[pd.DataFrame, np.ndarray]:
    """The task table's attempts of the parsed rows (module docstring), and each row's
    attempt number. Rows are in file order, by job then task index; `key`: each row's task."""
    start, end = rows["ST"].to_numpy(), rows["ET"].to_numpy()
    machine = rows["MI"].to_numpy()
    evict, fail = rows["EV"].to_numpy(), rows["FL"].to_numpy()
    attempt = np.empty(len(rows), dtype=np.int64)
    records = []
    overlapping = tasks_overlapping = several = events_unmatched = 0
    bounds = np.flatnonzero(np.r_[True, key[1:] != key[:-1], True])
    for first, stop in zip(bounds[:-1], bounds[1:]):
        open_run: dict[float, int] = {}  # machine -> its current run (attempt number)
        runs: list[list] = []  # [machine, start, end]
        latest_end, overlaps = -np.inf, 0
        for i in range(first, stop):
            run = open_run.get(machine[i])
            if run is None or start[i] != runs[run][2]:
                run = len(runs)
                runs.append([machine[i], start[i], end[i]])
                open_run[machine[i]] = run
            else:
                runs[run][2] = max(runs[run][2], end[i])
            attempt[i] = run
            overlaps += start[i] < latest_end
            latest_end = max(latest_end, end[i])
        overlapping += overlaps
        tasks_overlapping += overlaps > 0
        several += len(runs) > 1
        finished = max(range(len(runs)), key=lambda r: (runs[r][2], r))
        events = [
            status
            for i in range(first, stop)
            for status, count in (("failed", fail[i]), ("evicted", evict[i]))
            for _ in range(int(count))
        ]
        ended = [r for r in range(len(runs)) if r != finished]
        events_unmatched += max(0, len(events) - len(ended))
        for r, (run_machine, run_start, run_end) in enumerate(runs):
            status = "finished"
            if r != finished:
                k = ended.index(r)
                status = events[k] if k < len(events) else "lost"
            records.append(
                {
                    "job_id": rows["job"].iat[first],
                    "task_id": str(rows["task"].iat[first]),
                    "attempt": r,
                    "start_time": run_start / US,
                    "end_time": run_end / US,
                    "status": status,
                    "machine_id": f"{run_machine:.0f}",
                }
            )
    attempts = pd.DataFrame(records)
    report.count("task_files_read", len(bounds) - 1)
    report.count("tasks_with_several_attempts", int(several))
    report.count("usage_windows_overlapping_an_earlier_window", int(overlapping))
    report.count("tasks_with_overlapping_windows", int(tasks_overlapping))
    report.count("task_events_beyond_attempts", int(events_unmatched))
    for status, n in attempts["status"].value_counts().sort_index().items():
        report.count(f"attempts_{status}", int(n))
    return attempts, attempt


def task_table_frames(
    rows: pd.DataFrame, report: ConversionReport
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The parsed rows as the frames `read_tasks` and `read_usage` return (every attempt; every
    window with its measures and the running EV / FL totals)."""
    task = (rows["job"] + "/" + rows["task"].astype(str)).to_numpy()
    attempts, attempt = attempts_of(rows, task, report)
    attempts["speculative"] = False
    attempts[table_format.ROW] = np.arange(1, len(attempts) + 1)
    usage = pd.DataFrame(
        {
            "job_id": rows["job"].to_numpy(),
            "task_id": rows["task"].astype(str).to_numpy(),
            "attempt": attempt,
            "window_start": rows["ST"].to_numpy() / US,
            "window_end": rows["ET"].to_numpy() / US,
        }
    )
    usage["available_from"] = usage["window_end"]
    for name, column in COLUMN_OF.items():
        usage[column] = rows[name].to_numpy()
    usage = usage[[*table_format.USAGE_KEYS, *MEASURES]]
    usage[EVICTIONS_SO_FAR] = rows["EV"].groupby(task, sort=False).cumsum().to_numpy()
    usage[FAILURES_SO_FAR] = rows["FL"].groupby(task, sort=False).cumsum().to_numpy()
    usage[table_format.ROW] = np.arange(1, len(usage) + 1)
    sum_of_windows = (usage["window_end"] - usage["window_start"]).groupby(task).sum()
    span = usage.groupby(task).agg(first=("window_start", "min"), last=("window_end", "max"))
    differ = ~np.isclose(sum_of_windows, span["last"] - span["first"], rtol=0, atol=1e-6)
    report.count("tasks_sum_of_windows_differs_from_span", int(differ.sum()))
    report.count("usage_rows_in_files", len(rows))
    return attempts, usage


def spill_nurd_timeseries(
    raw_dir: Path | str,
    entries: list[str],
    spill_dir: Path | str,
    *,
    dataset: str,
    n_shards: int,
    min_tasks: int = MIN_TASKS,
) -> dict[str, Any]:
    """The `convert_part` stage of a nurd-timeseries dataset: the files as task-table frames,
    then the task table's own stage (spill_task_frames)."""
    from stragglers.convert.tasks_table import spill_task_frames

    report = ConversionReport(dataset)
    files = read_files(raw_dir, entries)
    report.files_read.extend(str(Path(raw_dir) / entry) for entry in entries)
    attempts, usage = task_table_frames(parse_rows(files), report)
    report.count("attempt_rows_read", len(attempts))
    return spill_task_frames(
        attempts,
        usage,
        spill_dir,
        report=report,
        usage_source=Path(raw_dir),
        with_machine=True,
        n_shards=n_shards,
        min_tasks=min_tasks,
        grid_origin=0.0,  # unused: the windows are the files'
        window_seconds=1.0,
        tasks_in_table_order=True,  # task position = task index, the scripts' order
    )


@_cleaning_up_on_failure
def convert_nurd_timeseries(
    raw_dir: Path | str,
    out_dir: Path | str,
    *,
    dataset: str,
    n_shards: int,
    min_tasks: int = MIN_TASKS,
    latency_definition: str = "schedule_to_finish",
) -> dict[str, Any]:
    """The authors' layout -> the converted layout in `out_dir`, in one process (written under
    `<out_dir>.tmp`, renamed only when complete)."""
    from stragglers.convert.gather import _convert_in_one_process

    entries = raw_entries(raw_dir)
    return _convert_in_one_process(
        Path(out_dir),
        KIND,
        dataset,
        n_shards,
        min_tasks,
        spill=lambda folder: spill_nurd_timeseries(
            raw_dir, entries, folder, dataset=dataset, n_shards=n_shards, min_tasks=min_tasks
        ),
        latency_definition=latency_definition,
    )
