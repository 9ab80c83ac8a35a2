"""The Table 3 fingerprint: how far a run's baselines sit from the paper's (docs/fingerprint.md).

The paper's Table 3 is the one measurement we have of the real task_usage data: about twenty
baselines scored under the authors' protocol. The fingerprint distance of a set of methods is
the mean over its rows (one row per dataset and method) of |TPR - paper TPR| + |FPR - paper
FPR|. The 21 baselines are split, once and before any fitting of the generator, into a
calibration set (cheap methods, the ones a search may fit) and a validation set (only
judged); NURD and NURD-NC are held out of both, so their score on fitted data tests the paper.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

CALIBRATION_SET = (
    "GBTR",
    "HBOS",
    "PCA",
    "MCD",
    "KNN",
    "LOF",
    "OCSVM",
    "CBLOF",
    "PU-EN",
    "Tobit",
    "CoxPH",
)
VALIDATION_SET = (
    "ABOD",
    "COF",
    "IFOREST",
    "LSCP",
    "SOD",
    "SOS",
    "XGBOD",
    "PU-BG",
    "Grabit",
    "Wrangler",
)
HELD_OUT_SET = ("NURD", "NURD-NC")
SETS = {
    "calibration": CALIBRATION_SET,
    "validation": VALIDATION_SET,
    "held-out": HELD_OUT_SET,
}
SET_NAMES = tuple(SETS)


def fingerprint_set(method: str) -> str | None:
    """The set a method belongs to (`calibration`, `validation`, `held-out`), None if none."""
    for name, members in SETS.items():
        if method in members:
            return name
    return None


def row_distance(frame: pd.DataFrame, reference: str = "paper") -> pd.Series:
    """|TPR - <reference>_TPR| + |FPR - <reference>_FPR| per row (NaN where either side lacks
    a number); the reference is the paper's row, or a calibration target's (`target`)."""
    ref_tpr, ref_fpr = f"{reference}_TPR", f"{reference}_FPR"
    missing = [c for c in ("TPR", "FPR", ref_tpr, ref_fpr) if c not in frame.columns]
    if missing:
        raise ValueError(f"fingerprint rows lack columns {missing}; have {list(frame.columns)}")
    return (frame["TPR"] - frame[ref_tpr]).abs() + (frame["FPR"] - frame[ref_fpr]).abs()


def set_distance(frame: pd.DataFrame, reference: str = "paper") -> tuple[float, int]:
    """The fingerprint distance of `frame`'s rows and how many rows had both numbers.

    The mean of `row_distance` over the rows that have ours and the paper's TPR and FPR; NaN
    when none has. Rows without a score (a method that failed on every job) are not counted,
    and the count says so.
    """
    distances = row_distance(frame, reference).to_numpy(dtype=float)
    scored = distances[~np.isnan(distances)]
    if scored.size == 0:
        return float("nan"), 0
    return float(scored.mean()), int(scored.size)
