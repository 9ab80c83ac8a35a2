"""Training sets for the neighbour detectors' equality tests (tests/test_pyod_kernels.py,
tests/test_lscp_kernel.py): what makes neighbourhoods tie."""

from __future__ import annotations

import numpy as np


def varied_rows(rng: np.random.Generator, trial: int, rows: int, columns: int) -> np.ndarray:
    """Normal rows, by trial rounded (tied distances), with a constant first column and with
    the first half of the rows one repeated row."""
    sample = rng.normal(size=(rows, columns))
    if trial % 3 == 0:
        sample = np.round(sample)
    if trial % 4 == 0:
        sample[:, 0] = 1.5
    if trial % 5 == 0:
        sample[1 : rows // 2 + 1] = sample[0]
    return sample
