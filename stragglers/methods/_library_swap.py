"""Library functions swapped for equal, cheaper ones while a detector runs, then restored.

`swapped_attributes` is the one way the methods' kernels do this: a library module's
attributes (functions it looks up by name when called) replaced for the duration of a `with`
block. `numpy_arrays_not_dataframes` is one such swap used by every PyOD detector: each of
scikit-learn's `check_array` calls (several per fit and per score, PyOD's and
scikit-learn's own) first asks narwhals whether its input is a dataframe or series of any
library narwhals knows, through `inspect.getattr_static` probes and plugin look-ups, a tenth
of a short job's detector time. For a numpy array the answer is always no: the swap answers it
without asking, and asks narwhals about anything else. tests/test_library_swap.py checks it
against narwhals' answer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import numpy as np
import sklearn.utils.validation as sklearn_validation


@contextlib.contextmanager
def swapped_attributes(module: ModuleType, **replacements: Any) -> Iterator[None]:
    """`module`'s attributes named in `replacements` set to their values, the values they had
    on entry restored on exit."""
    originals = {name: getattr(module, name) for name in replacements}
    for name, value in replacements.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in originals.items():
            setattr(module, name, value)


_SKLEARN_DATAFRAME_PROBE = sklearn_validation._nw_into_df_or_series


def dataframe_or_series(x: Any) -> bool:
    """scikit-learn's `_nw_into_df_or_series(x)`: False for a numpy array (of any shape and
    dtype; not a subclass), narwhals' answer for anything else."""
    if type(x) is np.ndarray:
        return False
    return _SKLEARN_DATAFRAME_PROBE(x)


def numpy_arrays_not_dataframes() -> contextlib.AbstractContextManager[None]:
    """scikit-learn's validation calling `dataframe_or_series` for its dataframe probe."""
    return swapped_attributes(sklearn_validation, _nw_into_df_or_series=dataframe_or_series)
