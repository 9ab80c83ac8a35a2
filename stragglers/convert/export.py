"""Any converted dataset -> a task table (stragglers/formats/tasks_table.py): the proof that the
format carries what the pipeline uses, since converting the table back gives job files with
the same features, latencies and checkpoints (tests/test_export.py).

    python -m stragglers.convert.export <converted dir> <out folder> [--csv]

How tasks become attempts (evictions and failures read off the EV / FL features), which
windows become usage rows and what is not exported: docs/your-own-trace.md ("The round trip").
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stragglers.convert.common import _AtomicFolder
from stragglers.convert.tasks_table import count_at_or_before
from stragglers.formats.datasets import (
    EVICTIONS_SO_FAR,
    FAILURES_SO_FAR,
    MACHINE_STATE_BY_KIND,
)
from stragglers.formats.jobs import (
    TASK_FACT_COLUMNS,
    WINDOW_COLUMNS,
    launch_columns,
    read_converted,
    read_manifest,
)

log = logging.getLogger(__name__)

COUNTS = {EVICTIONS_SO_FAR: ("evicted", "evictions"), FAILURES_SO_FAR: ("failed", "failures")}


def exported_features(columns: list[str]) -> list[str]:
    """The feature columns of a converted job file: what is neither a window column, a task
    fact nor machine state, in the file's order."""
    machine = [f.column for kind in MACHINE_STATE_BY_KIND.values() for f in kind]
    other = {*WINDOW_COLUMNS, *TASK_FACT_COLUMNS, *machine, *launch_columns(machine)}
    return [c for c in columns if c not in other]


def _read_jobs(converted_dir: Path) -> pd.DataFrame:
    """Every job's rows, in manifest order, with `job_id` and a global task number `gtask`
    (jobs in manifest order, tasks by position)."""
    import pyarrow.parquet as pq

    manifest = read_manifest(converted_dir)
    frames, offset = [], 0
    for row in manifest.itertuples():
        path = converted_dir / row.path
        columns = pq.read_schema(path).names
        wanted = [*WINDOW_COLUMNS, *TASK_FACT_COLUMNS, *exported_features(columns)]
        frame = read_converted(path, wanted)
        frame.insert(0, "job_id", str(row.job_id))
        frame.insert(1, "gtask", frame["task"].to_numpy(np.int64) + offset)
        offset += int(frame["task"].max()) + 1 if len(frame) else 0
        frames.append(frame)
    if not frames:
        raise ValueError(f"{converted_dir}: the manifest lists no job; nothing to export")
    columns = frames[0].columns
    for frame, row in zip(frames, manifest.itertuples()):
        if list(frame.columns) != list(columns):
            raise ValueError(
                f"{converted_dir / row.path}: its columns differ from the first job's; a "
                "dataset's job files share one feature set"
            )
    return pd.concat(frames, ignore_index=True)


def task_attempts(windows: pd.DataFrame, tasks: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """The attempts of every task (rows of `tasks`, indexed by gtask) from its EV / FL
    features, and each window's attempt number."""
    windows = windows.sort_values(["gtask", "available_from", "window_start"], kind="stable")
    gtask = windows["gtask"].to_numpy()
    first_of_task = np.r_[True, gtask[1:] != gtask[:-1]]
    pieces = []  # (task, time, status) of each eviction / failure
    for column, (status, total) in COUNTS.items():
        seen = np.zeros(len(tasks), dtype=np.int64)
        if column in windows:
            count = windows[column].to_numpy()
            if np.isnan(count).any() or (count != np.floor(count)).any():
                raise ValueError(f"{column}: not a count (NaN or fractional values)")
            count = count.astype(np.int64)
            previous = np.where(first_of_task, 0, np.r_[0, count[:-1]])
            rise = count - previous
            if (rise < 0).any():
                raise ValueError(
                    f"{column}: falls between two windows of a task; not a count so far"
                )
            pieces.append(
                (
                    np.repeat(gtask, rise),
                    np.repeat(windows["available_from"].to_numpy(), rise),
                    status,
                )
            )
            np.maximum.at(seen, gtask, count)
        # the task's events no window saw: at its end
        rest = tasks[total].to_numpy(np.int64) - seen
        if (rest < 0).any():
            raise ValueError(f"{column}: exceeds the task's {total} total")
        pieces.append(
            (
                np.repeat(tasks.index.to_numpy(), rest),
                np.repeat(tasks["task_end"].to_numpy(), rest),
                status,
            )
        )
    event_task = np.concatenate([task for task, _, _ in pieces]).astype(np.int64)
    event_time = np.concatenate([time for _, time, _ in pieces]).astype(np.float64)
    event_status = np.concatenate([np.full(len(task), status) for task, _, status in pieces])
    order = np.lexsort((event_time, event_task))  # evictions before failures at one time
    event_task, event_time, event_status = event_task[order], event_time[order], event_status[order]
    n_events = np.bincount(event_task, minlength=len(tasks))
    # attempt i of a task runs from event i-1 (or the task's start) to event i (or its end)
    n_attempts = n_events + 1
    task_of = np.repeat(tasks.index.to_numpy(), n_attempts)
    attempt = np.arange(n_attempts.sum()) - np.repeat(
        np.cumsum(n_attempts) - n_attempts, n_attempts
    )
    is_last = attempt == n_attempts[task_of] - 1
    end = np.empty(len(task_of))
    end[~is_last] = event_time
    end[is_last] = tasks["task_end"].to_numpy()
    start = np.empty(len(task_of))
    start[attempt == 0] = tasks["task_start"].to_numpy()
    start[attempt > 0] = end[np.flatnonzero(attempt > 0) - 1]
    status = np.empty(len(task_of), dtype=object)
    status[~is_last] = event_status
    status[is_last] = "finished"
    machine = np.full(len(task_of), "", dtype=object)
    machine[is_last] = tasks["machine_id"].astype(str).to_numpy()
    attempts = pd.DataFrame(
        {
            "job_id": tasks["job_id"].to_numpy()[task_of],
            "task_id": tasks["task_id"].to_numpy()[task_of],
            "attempt": attempt.astype(np.int64),
            "start_time": start,
            "end_time": end,
            "status": status.astype(str),
            "machine_id": machine.astype(str),
        }
    )
    # a window belongs to the attempt running when it is read: the task's events strictly
    # before its available_from (nextafter: an event at time x counts as "<= t" iff x < t)
    window_attempt = count_at_or_before(
        event_task, np.nextafter(event_time, np.inf), gtask, windows["available_from"].to_numpy()
    )
    return attempts, pd.Series(window_attempt, index=windows.index)


def export_task_table(
    converted_dir: Path | str, out_dir: Path | str, *, csv: bool = False
) -> dict[str, Any]:
    """Write `tasks.parquet` and `usage.parquet` (with `csv`: tasks.csv.gz, usage.csv.gz) of
    the converted dataset in `converted_dir` to the folder `out_dir` (written under
    `<out_dir>.tmp`, renamed when complete)."""
    converted_dir, out_dir = Path(converted_dir), Path(out_dir)
    frame = _read_jobs(converted_dir)
    features = exported_features(list(frame.columns[2:]))
    tasks = frame.drop_duplicates("gtask").set_index("gtask").sort_index()
    duplicated = tasks.duplicated(["job_id", "task_id"])
    if duplicated.any():
        first = tasks[duplicated].iloc[0]
        raise ValueError(
            f"{converted_dir}: job {first['job_id']} has two tasks named {first['task_id']!r}; "
            "a task table names each task once"
        )
    attempts, window_attempt = task_attempts(frame, tasks)
    measures = [c for c in features if c not in COUNTS]
    usage = pd.DataFrame(
        {
            "job_id": frame["job_id"].to_numpy(),
            "task_id": tasks["task_id"].to_numpy()[frame["gtask"].to_numpy()],
            "attempt": window_attempt.reindex(frame.index).to_numpy(),
            "window_start": frame["window_start"].to_numpy(np.float64),
            "window_end": frame["window_end"].to_numpy(np.float64),
            "available_from": frame["available_from"].to_numpy(np.float64),
            **{c: frame[c].to_numpy(np.float64) for c in measures},
        }
    )
    with _AtomicFolder(out_dir) as staging:
        if csv:
            attempts.to_csv(staging / "tasks.csv.gz", index=False)
            usage.to_csv(staging / "usage.csv.gz", index=False)
        else:
            attempts.to_parquet(staging / "tasks.parquet", index=False)
            usage.to_parquet(staging / "usage.parquet", index=False)
    summary = {
        "jobs": int(frame["job_id"].nunique()),
        "tasks": len(tasks),
        "attempts": len(attempts),
        "windows": len(usage),
        "measurements": measures,
    }
    log.info("exported %s to %s: %s", converted_dir, out_dir, summary)
    return summary


def _layout_rows(task: pd.DataFrame, job_id: str, task_index: int) -> np.ndarray:
    """One task's windows (time order) as the NURD layout's 22 columns: times in
    microseconds, the task's machine on every row (a converted file keeps one per task), the
    13 usage measures where the dataset has them (else 0, as the authors' fillna(0)), EV / FL
    as per-window counts (the differences of the running totals)."""
    from stragglers.convert.nurd_timeseries import MEASURES, US
    from stragglers.formats.datasets import SCRIPT_COLUMNS, SCRIPT_LAYOUT

    table = np.zeros((len(task), len(SCRIPT_LAYOUT)), dtype=object)
    table[:, 0] = np.round(task["window_start"].to_numpy(np.float64) * US).astype(np.int64)
    table[:, 1] = np.round(task["window_end"].to_numpy(np.float64) * US).astype(np.int64)
    table[:, 2] = job_id
    table[:, 3] = task_index
    machine = str(task["machine_id"].iloc[0])
    table[:, 4] = machine if machine.isdigit() else 0
    for column in MEASURES:
        if column in task:
            table[:, SCRIPT_LAYOUT.index(SCRIPT_COLUMNS[column])] = np.nan_to_num(
                task[column].to_numpy(np.float64)
            )
    for name, column in (("EV", EVICTIONS_SO_FAR), ("FL", FAILURES_SO_FAR)):
        if column in task:
            total = np.nan_to_num(task[column].to_numpy(np.float64)).astype(np.int64)
            table[:, SCRIPT_LAYOUT.index(name)] = np.diff(np.r_[0, total])
    return table


def export_nurd_timeseries(converted_dir: Path | str, out_dir: Path | str) -> dict[str, Any]:
    """Write the converted dataset in `converted_dir` in the NURD authors' layout
    (`<out_dir>/<job>/<task index>`, stragglers/convert/nurd_timeseries.py), which their
    scripts read as `run_ts.py --data_path <out_dir>/ --jobid <job>`. A job whose task ids are
    0 .. n-1 keeps them as file names; other jobs' tasks are numbered by their position in the
    job. Each task's latency, read back, runs from its first window's start to its last
    window's end (the layout has no task events). Written under `<out_dir>.tmp`, renamed when
    complete."""
    from stragglers.convert.common import _safe_name

    converted_dir, out_dir = Path(converted_dir), Path(out_dir)
    frame = _read_jobs(converted_dir)
    n_files = 0
    with _AtomicFolder(out_dir) as staging:
        for job_id, job in frame.groupby("job_id", sort=True):
            job = job.sort_values(["gtask", "window_start"], kind="stable")
            tasks = job.drop_duplicates("gtask")
            ids = tasks["task_id"].astype(str).to_numpy()
            own = sorted(ids) == sorted(map(str, range(len(ids))))
            names = dict(zip(tasks["gtask"], ids if own else map(str, range(len(ids)))))
            folder = staging / _safe_name(str(job_id))
            folder.mkdir()
            for gtask, task in job.groupby("gtask", sort=False):
                index = names[gtask]
                rows = _layout_rows(task, str(job_id), int(index))
                lines = [
                    ",".join(
                        [*(str(v) for v in row[:5]), *(repr(float(v)) for v in row[5:20])]
                        + [str(int(v)) for v in row[20:]]
                    )
                    for row in rows
                ]
                (folder / index).write_text("\n".join(lines) + "\n")
                n_files += 1
    summary = {"jobs": int(frame["job_id"].nunique()), "task_files": n_files, "windows": len(frame)}
    log.info("exported %s to %s (NURD layout): %s", converted_dir, out_dir, summary)
    return summary


LAYOUTS = {"task-table": "tasks.* and usage.*", "nurd-timeseries": "<job>/<task index> files"}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m stragglers.convert.export",
        description="Write a converted dataset as a task table (tasks.* and usage.*), or in the "
        "NURD authors' layout that their scripts read (--layout nurd-timeseries).",
    )
    parser.add_argument("converted_dir", help="a converted dataset: resources/converted/<dataset>")
    parser.add_argument("out", help="the folder to write (replaced if it exists)")
    parser.add_argument("--csv", action="store_true", help="task table: .csv.gz, not .parquet")
    parser.add_argument(
        "--layout",
        choices=list(LAYOUTS),
        default="task-table",
        help="; ".join(f"{name}: {what}" for name, what in LAYOUTS.items()),
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.layout == "nurd-timeseries":
        export_nurd_timeseries(args.converted_dir, args.out)
    else:
        export_task_table(args.converted_dir, args.out, csv=args.csv)


if __name__ == "__main__":
    main()
