"""Feature handling shared by the baseline methods: point-in-time standardisation and seeds.

Every statistic here is computed from the data a method sees at one checkpoint (finished and
running tasks' features), never from later checkpoints or from the tasks' final features.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# A column whose spread is below this (relative to its magnitude) is treated as constant:
# dividing by it would turn rounding noise into signal.
_RELATIVE_SPREAD_FLOOR = 1e-9


@dataclass(frozen=True)
class Standardizer:
    """Column-wise z-scoring with statistics taken from one checkpoint's data."""

    mean: np.ndarray  # (d,)
    scale: np.ndarray  # (d,), 1 where the column is constant
    varying: np.ndarray  # (d,) bool, False where the column is constant

    def transform(self, features: np.ndarray) -> np.ndarray:
        """Z-score `features`; missing values (NaN) become 0, i.e. the column mean."""
        z = (np.asarray(features, dtype=np.float64) - self.mean) / self.scale
        return np.where(np.isfinite(z), z, 0.0)


def fit_standardizer(*blocks: np.ndarray) -> Standardizer:
    """Statistics of the rows of all `blocks` together (e.g. finished and running features).

    NaN entries (a task with no measured window yet) are ignored; a column that is constant
    or entirely missing gets mean 0-or-its-value and scale 1, so it maps to 0 everywhere.
    """
    stacked = np.vstack([np.asarray(b, dtype=np.float64) for b in blocks])
    if stacked.ndim != 2 or stacked.shape[0] == 0:
        raise ValueError(f"cannot standardise an empty feature block of shape {stacked.shape}")
    finite = np.isfinite(stacked)
    counts = finite.sum(axis=0)
    safe = np.where(finite, stacked, 0.0)
    mean = np.divide(safe.sum(axis=0), counts, out=np.zeros(stacked.shape[1]), where=counts > 0)
    centred = np.where(finite, stacked - mean, 0.0)
    var = np.divide(
        (centred**2).sum(axis=0), counts, out=np.zeros(stacked.shape[1]), where=counts > 0
    )
    std = np.sqrt(var)
    varying = std > _RELATIVE_SPREAD_FLOOR * np.maximum(np.abs(mean), 1.0)
    scale = np.where(varying, std, 1.0)
    return Standardizer(mean=mean, scale=scale, varying=varying)


def varying_columns(z: np.ndarray) -> np.ndarray:
    """Bool mask of the columns of `z` that are not constant over its rows."""
    z = np.asarray(z, dtype=np.float64)
    if z.shape[0] < 2:
        return np.zeros(z.shape[1], dtype=bool)
    spread = z.max(axis=0) - z.min(axis=0)
    return spread > _RELATIVE_SPREAD_FLOOR * np.maximum(np.abs(z).max(axis=0), 1.0)


def job_seed(method_seed: int, job_seed: int, *extra: int) -> int:
    """A 32-bit seed mixing the method's seed, the job's seed and optional extra keys."""
    words = [int(method_seed) & 0xFFFFFFFF, int(job_seed) & 0xFFFFFFFF]
    words += [int(e) & 0xFFFFFFFF for e in extra]
    return int(np.random.SeedSequence(words).generate_state(1)[0])


def distinct_row_count(z: np.ndarray) -> int:
    """Number of distinct rows of `z` (clusterings cannot use more clusters than this)."""
    if len(z) == 0:
        return 0
    return int(np.unique(np.round(np.asarray(z, dtype=np.float64), 12), axis=0).shape[0])
