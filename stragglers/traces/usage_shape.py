"""Within-job shape of the Google task_usage columns, to compare generated traces with real rows.

For every (job, usage window) with at least `min_tasks` tasks, and every usage column, the
tasks' values are summarised by the median of their position in the job's range
((value - min) / (max - min)), the robust spread of their logs (IQR / 1.349) and the
skewness of their logs. The medians over (job, window) groups are reported per column. The
first 10,000 real rows (../shared) hold one window of about 40 such groups: there, a job's
memory, page-cache and disk-space values crowd mid-range or high with a tail of lighter tasks
(negative log skew), where the generated ones sit low with a few high outliers, the
mechanisms' signatures (docs/generator.md, "Usage levels": a known gap).

    python -m stragglers.traces.usage_shape \\
        ../shared/data/google-2011/task_usage/part-00000-of-00500.first10000rows.csv.gz \\
        resources/raw/google-synthetic
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from stragglers.formats.raw import GOOGLE_TASK_USAGE
from stragglers.traces.calibrate import part_files

USAGE_COLUMNS = (
    "cpu_rate",
    "canonical_memory_usage",
    "assigned_memory_usage",
    "unmapped_page_cache",
    "total_page_cache",
    "maximum_memory_usage",
    "disk_io_time",
    "local_disk_space_usage",
    "maximum_cpu_rate",
    "maximum_disk_io_time",
    "cycles_per_instruction",
    "memory_accesses_per_instruction",
)
STATISTICS = ("position", "log_spread", "log_skew")


def read_usage(path: str | Path) -> pd.DataFrame:
    used = ["start_time", "job_id", "task_index", *USAGE_COLUMNS]
    frames = [
        pd.read_csv(file, header=None, names=GOOGLE_TASK_USAGE, usecols=used)
        for file in part_files(path, "task_usage")
    ]
    return pd.concat(frames, ignore_index=True)


def group_statistics(values: np.ndarray) -> dict[str, float]:
    """Position in the range, robust log spread and log skewness of one group's values."""
    values = values[np.isfinite(values) & (values > 0)]
    low, high = values.min(), values.max()
    logs = np.log(values)
    q25, q75 = np.quantile(logs, [0.25, 0.75])
    return {
        "position": float(np.median((values - low) / (high - low))) if high > low else np.nan,
        "log_spread": float((q75 - q25) / 1.349),
        "log_skew": float(pd.Series(logs).skew()),
    }


def usage_shape(usage: pd.DataFrame, min_tasks: int = 20) -> pd.DataFrame:
    """Per usage column, the median over (job, window) groups of each statistic, and how many
    groups were measured."""
    rows = []
    for _, group in usage.groupby(["job_id", "start_time"], sort=True):
        if len(group) < min_tasks:
            continue
        for column in USAGE_COLUMNS:
            values = group[column].to_numpy(np.float64)
            if np.count_nonzero(np.isfinite(values) & (values > 0)) < min_tasks:
                continue
            rows.append({"column": column, **group_statistics(values)})
    frame = pd.DataFrame(rows, columns=["column", *STATISTICS])
    summary = frame.groupby("column", sort=False)[list(STATISTICS)].median()
    summary["groups"] = frame.groupby("column", sort=False).size()
    return summary.reindex([c for c in USAGE_COLUMNS if c in summary.index])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", help="task_usage part files or trace folders")
    parser.add_argument("--min-tasks", type=int, default=20)
    args = parser.parse_args(argv)
    tables = {trace: usage_shape(read_usage(trace), args.min_tasks) for trace in args.traces}
    print(pd.concat(tables, axis=1).round(3).to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
