"""Rows of the replay's prediction tables (`stragglers.formats.predictions`) for tests that
build tables by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd


def task_frame(dataset, method, job_id, task, start, latency, threshold, evaluated, flagged, flag):
    """One job's task rows: is_straggler from `threshold`, flag_time NaN where not flagged."""
    return pd.DataFrame(
        {
            "dataset": dataset,
            "method": method,
            "job_id": job_id,
            "task": task,
            "latency": latency,
            "task_start": start,
            "task_end": start + latency,
            "is_straggler": latency >= threshold,
            "evaluated": evaluated,
            "flagged": flagged,
            "flag_time": np.where(flagged, flag, np.nan),
        }
    )


def job_record(dataset, method, family, job_id, status, threshold, start, end, **other):
    """One job's row: privileged False, reason empty, 0.5 s and 3 checkpoints unless `other`
    says otherwise."""
    return {
        "dataset": dataset,
        "method": method,
        "family": family,
        "privileged": other.get("privileged", False),
        "job_id": job_id,
        "status": status,
        "reason": other.get("reason", ""),
        "seconds": other.get("seconds", 0.5),
        "n_checkpoints": 3,
        "straggler_threshold": threshold,
        "job_start": float(np.min(start)),
        "job_end": float(np.max(end)),
        "prediction_start": 0.0,
    }
