"""CoxPH's fit (stragglers/methods/_cox_breslow.py) gives lifelines' CoxPHFitter values bit
for bit: coefficients, the baseline cumulative hazard and the log partial hazard at the
origin, and raises where lifelines raises."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from lifelines import CoxPHFitter

from stragglers.methods._cox_breslow import fit_cox_breslow


def _frames(count: int, seed: int):
    """Frames as CoxPH builds them (z-scored covariates x0.., duration, event), and the edge
    cases: tied durations, ties between events and censored rows, a constant column, no
    covariate, two rows, a single event, near-separation."""
    rng = np.random.default_rng(seed)
    for trial in range(count):
        n = int(rng.integers(2, 60))
        d = int(rng.integers(0, 5)) if trial % 7 == 0 else int(rng.integers(1, 5))
        Z = rng.normal(size=(n, d))
        durations = rng.exponential(100.0, size=n) + 1e-6
        events = (rng.random(n) < rng.uniform(0.2, 1.0)).astype(int)
        events[0] = 1
        shape = trial % 6
        if shape == 1:
            durations = np.round(durations / 20.0) * 20.0 + 1.0  # ties
        elif shape == 2 and d:
            Z[:, 0] = 0.0  # a constant column
        elif shape == 3:
            events[:] = 0
            events[int(rng.integers(n))] = 1  # a single event
        elif shape == 4 and d:
            durations = np.exp(3.0 * Z[:, 0]) + 1.0  # nearly separated by x0
        frame = pd.DataFrame(Z, columns=[f"x{i}" for i in range(d)])
        frame["duration"] = durations
        frame["event"] = events
        yield frame


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("penalizer", [0.1, 1.0, 0.0])
def test_fit_cox_breslow_equals_lifelines(penalizer):
    compared = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for frame in _frames(70, int(penalizer * 10) + 3):
            try:
                expected = CoxPHFitter(penalizer=penalizer).fit(
                    frame, duration_col="duration", event_col="event"
                )
            except Exception as err:  # the same error from ours
                with pytest.raises(type(err)):
                    fit_cox_breslow(frame, penalizer, "duration", "event")
                continue
            ours = fit_cox_breslow(frame, penalizer, "duration", "event")
            pd.testing.assert_series_equal(ours.params, expected.params_, check_exact=True)
            pd.testing.assert_frame_equal(
                ours.baseline_cumulative_hazard,
                expected.baseline_cumulative_hazard_,
                check_exact=True,
            )
            d = frame.shape[1] - 2
            if d:
                origin = pd.DataFrame(np.zeros((1, d)), columns=frame.columns[:-2])
                offset = float(np.asarray(expected.predict_log_partial_hazard(origin))[0])
                assert _same(ours.log_partial_hazard_at_origin(), offset)
            compared += 1
    assert compared > 50


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # pandas' variance of an infinity
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_fit_cox_breslow_raises_what_lifelines_raises(bad):
    frame = pd.DataFrame({"x0": [bad, 0.0, 1.0, 2.0]})
    frame["duration"] = [1.0, 2.0, 3.0, 4.0]
    frame["event"] = [1, 1, 0, 1]
    with pytest.raises(Exception) as expected:
        CoxPHFitter().fit(frame, duration_col="duration", event_col="event")
    with pytest.raises(type(expected.value)):
        fit_cox_breslow(frame, 0.0, "duration", "event")
