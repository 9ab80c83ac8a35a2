"""A live run's recording replayed offline: the task table converted as any `tasks-table`
dataset, each stage replayed by the replay (stragglers/replay/wallclock.py) with the recorded
poll times as its explicit checkpoint times and the threshold the live run gave the method.
The flags equal the live run's (tests/test_live.py): a live run decides on nothing the
recording does not hold.

    python -m stragglers.live.replay DIR [--method NAME --params JSON]

prints the flags as JSON lines (job_id, task, flag_time).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stragglers.convert.tasks_table import convert_tasks_table
from stragglers.formats.datasets import last_columns
from stragglers.formats.jobs import iter_shard_jobs
from stragglers.live.recording import POLLS, numbers_as_read
from stragglers.live.watch import EVENTS, SETTINGS, live_settings
from stragglers.methods import get_method
from stragglers.replay.core import derive_seed
from stragglers.replay.wallclock import replay_wallclock_job

KIND = "tasks-table"


def poll_times(folder: Path | str) -> np.ndarray:
    """The recording's poll times, as its files hold them."""
    with open(Path(folder) / POLLS, newline="") as handle:
        return numbers_as_read([row["time"] for row in csv.DictReader(handle)])


def live_events(folder: Path | str, kind: str) -> list[dict[str, Any]]:
    with open(Path(folder) / EVENTS) as handle:
        return [e for e in map(json.loads, handle) if e["kind"] == kind]


def replay_recording(
    folder: Path | str, method: str | None = None, params: dict | None = None
) -> pd.DataFrame:
    """The flags of the method (default: the live run's, with its parameters) replayed on the
    recording at its poll times: job_id, task (index), flag_time; the stages whose every task
    finished (the conversion drops the others)."""
    folder = Path(folder)
    settings = json.loads((folder / SETTINGS).read_text())
    if method is not None:
        settings = {**settings, "method": method, "label": method, "params": params or {}}
    thresholds = {e["job_id"]: e["threshold"] for e in live_events(folder, "prediction_start")}
    replay = live_settings(settings)
    method_class = get_method(settings["method"])
    times = poll_times(folder)
    rows = []
    with tempfile.TemporaryDirectory(prefix="live-replay-") as tmp:
        converted = Path(tmp) / "converted"
        convert_tasks_table(
            folder,
            converted,
            dataset="live",
            n_shards=1,
            min_tasks=int(settings["min_tasks"]),
            grid_origin=0.0,
            window_seconds=float(settings["interval"]),
        )
        last = last_columns(KIND, converted)
        for job in iter_shard_jobs(converted, KIND, None):
            seed = derive_seed(int(settings["seed"]), settings["label"], job.job_id)
            instance = method_class(settings["params"], seed=seed)
            run = replay_wallclock_job(
                job,
                instance,
                replay,
                last,
                instance.seed,
                times=times,
                method_threshold=thresholds.get(job.job_id),
            )
            for position in np.flatnonzero(~np.isnan(run.flag_time)):
                rows.append(
                    {
                        "job_id": job.job_id,
                        "task": int(job.task_id[position]),
                        "flag_time": float(run.flag_time[position]),
                    }
                )
    return pd.DataFrame(rows, columns=["job_id", "task", "flag_time"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="a live watch's output folder")
    parser.add_argument("--method", help="another method than the live run's")
    parser.add_argument("--params", default="{}", help="its parameters, JSON")
    args = parser.parse_args(argv)
    flags = replay_recording(args.folder, args.method, json.loads(args.params))
    for row in flags.itertuples(index=False):
        print(json.dumps(row._asdict()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
