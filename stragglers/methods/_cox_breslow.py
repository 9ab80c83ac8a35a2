"""CoxPH's fit without what lifelines computes besides the model.

`CoxPHFitter(penalizer).fit(frame, "duration", "event")` (Breslow baseline, the default)
spends much of its CPU on results CoxPH does not read: summary statistics of every column
(pandas `describe`, for plots), the training rows' partial hazards, standard errors,
confidence intervals and the baseline survival. `fit_cox_breslow` runs the steps of
lifelines' fit that the coefficients and the baseline cumulative hazard come from (its
preprocessing, normalisation, Newton-Raphson and Breslow estimate, called as lifelines calls
them) and skips the rest, so the values are lifelines' own. Pinned by
tests/test_cox_breslow.py against lifelines (requirements.lock).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class CoxBreslowFit:
    """What CoxPH reads of a fitted CoxPHFitter."""

    params: pd.Series  # `params_`
    baseline_cumulative_hazard: pd.DataFrame  # `baseline_cumulative_hazard_`
    norm_mean: pd.Series  # `_norm_mean`, the covariates' means lifelines centres on

    def log_partial_hazard_at_origin(self) -> float:
        """`predict_log_partial_hazard` of the all-zero covariate row."""
        from lifelines import utils

        origin = np.zeros((1, len(self.params)), dtype=float)
        origin = utils.normalize(origin, self.norm_mean.values, 1)
        return float(np.asarray(np.dot(origin, self.params))[0])


def fit_cox_breslow(
    frame: pd.DataFrame, penalizer: float, duration_col: str, event_col: str
) -> CoxBreslowFit:
    """The model of CoxPHFitter(penalizer=penalizer).fit(frame, duration_col, event_col).

    Raises what that fit raises (lifelines' ConvergenceError included)."""
    from lifelines import CoxPHFitter, utils
    from lifelines.fitters.coxph_fitter import SemiParametricPHFitter

    settings = CoxPHFitter(penalizer=penalizer)
    if settings.baseline_estimation_method != "breslow" or settings.strata is not None:
        raise RuntimeError("fit_cox_breslow follows CoxPHFitter's Breslow fit without strata")
    # CoxPHFitter._fit_model_breslow's model, and what SemiParametricPHFitter.fit sets
    # before fitting (no weights, clusters, entries, strata or formula)
    model = SemiParametricPHFitter(
        penalizer=settings.penalizer,
        l1_ratio=settings.l1_ratio,
        strata=settings.strata,
        alpha=settings.alpha,
        label=settings._label,
    )
    utils.CensoringType.set_censoring_type(model, utils.CensoringType.RIGHT)
    model.duration_col = duration_col
    model.event_col = event_col
    model.robust = False
    model.cluster_col = None
    model.weights_col = None
    model._n_examples = frame.shape[0]
    model._batch_mode = None
    model.strata = None
    model.formula = None
    model.entry_col = None

    X, T, E, weights, entries, _, _ = model._preprocess_dataframe(frame)
    model.durations = T.copy()
    model.event_observed = E.copy()
    model.weights = weights.copy()
    model.entries = entries
    model._norm_mean = X.mean(0)
    model._norm_std = X.std(0)
    X_norm = pd.DataFrame(
        utils.normalize(X.values, model._norm_mean.values, model._norm_std.values),
        index=X.index,
        columns=X.columns,
    )
    params, _, _, _, cumulative, _ = model._fit_model(
        X_norm,
        T,
        E,
        weights=weights,
        entries=entries,
        fit_options={},
        initial_point=None,
        show_progress=False,
    )
    return CoxBreslowFit(
        params=pd.Series(params, index=pd.Index(X.columns, name="covariate"), name="coef"),
        baseline_cumulative_hazard=cumulative,
        norm_mean=model._norm_mean,
    )
