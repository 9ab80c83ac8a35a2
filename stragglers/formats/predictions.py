"""The prediction files' format: for every (dataset, method), one row per task
(`shard-<k>.tasks.parquet`) and one per job (`shard-<k>.jobs.parquet`). The replay and the
launch stage write them; evaluation, timing and the simulation read only them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

KEYS = ["dataset", "method", "job_id"]

# column -> dtype of the task rows (NaN flag_time: never flagged; NaN resume_attempts: the
# policy's default number of attempts)
TASK_DTYPES = {
    "dataset": str,
    "method": str,
    "job_id": str,
    "task": np.int32,
    "latency": float,
    "task_start": float,
    "task_end": float,
    "is_straggler": bool,
    "evaluated": bool,
    "flagged": bool,
    "flag_time": float,
    "resume_attempts": float,
}
TASK_COLUMNS = list(TASK_DTYPES)
JOB_COLUMNS = [
    "dataset",
    "method",
    "family",
    "privileged",
    "job_id",
    "n_tasks",
    "status",
    "reason",
    "seconds",
    "n_checkpoints",
    "straggler_threshold",
    "job_start",
    "job_end",
    "prediction_start",
]
# what scoring needs; the rest (resume_attempts, n_tasks) only some readers use, so tables
# made by other tools without them can still be scored
REQUIRED_TASK_COLUMNS = [c for c in TASK_COLUMNS if c != "resume_attempts"]
REQUIRED_JOB_COLUMNS = [c for c in JOB_COLUMNS if c != "n_tasks"]


def empty_tasks_frame() -> pd.DataFrame:
    return pd.DataFrame({column: pd.Series(dtype=dtype) for column, dtype in TASK_DTYPES.items()})
