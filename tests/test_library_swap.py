"""The library swaps of stragglers/methods/_library_swap.py: attributes restored, and the
dataframe probe answering as scikit-learn's (narwhals') on every kind of input."""

from __future__ import annotations

import types
import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn.utils.validation as sklearn_validation
from neighbour_samples import varied_rows

from stragglers.methods._library_swap import (
    _SKLEARN_DATAFRAME_PROBE,
    dataframe_or_series,
    numpy_arrays_not_dataframes,
    swapped_attributes,
)


def test_swapped_attributes_sets_then_restores_even_on_error():
    module = types.SimpleNamespace(first=1, second="two")
    with swapped_attributes(module, first=10, second="twenty"):
        assert (module.first, module.second) == (10, "twenty")
        with swapped_attributes(module, first=100):  # nested: back to the outer swap's value
            assert module.first == 100
        assert module.first == 10
    assert (module.first, module.second) == (1, "two")
    with pytest.raises(KeyError), swapped_attributes(module, first=10):
        raise KeyError
    assert module.first == 1


def _inputs():
    """numpy arrays of every shape, dtype and layout the detectors could pass, and what
    narwhals takes for a dataframe or series (and a few things it does not)."""
    rng = np.random.default_rng(5)
    for trial in range(20):
        rows = int(rng.integers(1, 60))
        sample = varied_rows(rng, trial, rows, int(rng.integers(1, 14)))
        yield sample
        yield np.asfortranarray(sample)
        yield sample[:, ::2]
        yield sample[:, 0]
        yield sample.astype(np.float32)
    yield np.zeros((0, 3))
    yield np.zeros(0)
    yield np.array(2.5)
    yield np.array([[np.nan, np.inf], [1.0, -np.inf]])
    yield np.arange(6).reshape(2, 3)
    yield np.array([[True, False]])
    yield np.array([["a", 1]], dtype=object)
    yield np.array([1 + 2j])
    yield np.ma.masked_array([[1.0, 2.0]], mask=[[False, True]])  # subclass: narwhals asks
    frame = pd.DataFrame({"a": [1.0, 2.0], "b": [3, 4]})
    yield frame
    yield frame["a"]
    yield frame.to_numpy()
    yield [[1.0, 2.0], [3.0, 4.0]]
    yield (1.0, 2.0)
    yield None
    yield "text"


def test_dataframe_probe_answers_as_scikit_learns():
    answers = []
    for x in _inputs():
        expected = _SKLEARN_DATAFRAME_PROBE(x)
        assert dataframe_or_series(x) is expected, type(x)
        answers.append(expected)
    assert any(answers) and not all(answers)  # dataframes and series are told apart


def test_check_array_gives_the_same_with_and_without_the_swap():
    for x in _inputs():
        if x is None or isinstance(x, str):
            continue
        for kwargs in ({}, {"ensure_2d": False, "dtype": None}, {"dtype": np.float64}):
            outcome = []
            for swapped in (False, True):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        if swapped:
                            with numpy_arrays_not_dataframes():
                                assert sklearn_validation._nw_into_df_or_series is (
                                    dataframe_or_series
                                )
                                result = sklearn_validation.check_array(x, **kwargs)
                        else:
                            result = sklearn_validation.check_array(x, **kwargs)
                        outcome.append(("value", np.asarray(result), type(result)))
                    except Exception as error:
                        outcome.append(("error", type(error), str(error)))
            assert sklearn_validation._nw_into_df_or_series is _SKLEARN_DATAFRAME_PROBE
            plain, swapped_outcome = outcome
            assert plain[0] == swapped_outcome[0] and plain[2] == swapped_outcome[2]
            if plain[0] == "value":
                np.testing.assert_array_equal(plain[1], swapped_outcome[1], strict=True)
            else:
                assert plain[1] is swapped_outcome[1]


def test_detectors_run_with_the_swap_and_leave_scikit_learn_as_it_was():
    from jobfactory import LAST, make_job

    from stragglers.methods.knn import KNN
    from stragglers.replay.core import ReplaySettings
    from stragglers.replay.runner import replay_job

    seen = []

    class ProbedKNN(KNN):
        def make_detector(self, n_train, seed):
            seen.append(sklearn_validation._nw_into_df_or_series is dataframe_or_series)
            return super().make_detector(n_train, seed)

    replay_job(make_job(60, seed=3), ProbedKNN({}), ReplaySettings(), LAST, seed=9)
    assert seen and all(seen)
    assert sklearn_validation._nw_into_df_or_series is _SKLEARN_DATAFRAME_PROBE
