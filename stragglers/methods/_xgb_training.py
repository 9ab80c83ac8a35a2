"""XGBoost's boosting rounds without its per-round Python overhead (Grabit, XGBOD, the NURD
family's XGBoost regressor).

`xgboost.train(params, dtrain, rounds, obj=objective)` runs, per round, a margin prediction
on the training matrix, the custom objective and one boosting step, and checks the matrix's
feature names and the gradients' layout each time; profiles of Grabit found that Python side
comparable to the C++ boosting itself. `train_with_objective` makes the same library calls
in the same order (the booster's margin prediction, `XGBoosterTrainOneIter` with the
objective's gradients, the empty evaluation of a run without `evals`, and the final
`reset`), checking once, so the trees are XGBoost's own. `train_builtin` does the same for
an objective XGBoost computes itself (`XGBoosterUpdateOneIter` each round), and
`fit_classifier` is XGBClassifier.fit around it (XGBOD's classifier, fitted at every
refit). Pinned by tests/test_xgb_training.py against `xgboost.train` and
`XGBClassifier.fit` (requirements.lock): the saved models are the same bytes.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    import xgboost as xgb


def train_with_objective(
    params: dict,
    dtrain: xgb.DMatrix,
    num_boost_round: int,
    objective: Callable[[np.ndarray, xgb.DMatrix], tuple[np.ndarray, np.ndarray]],
) -> xgb.Booster:
    """`xgboost.train(params, dtrain, num_boost_round, obj=objective)` (no evals, callbacks,
    early stopping or custom metric) for a plain callable objective returning numpy
    gradients and hessians of one value per row."""
    from xgboost.core import _LIB, _check_call, _prediction_output, c_bst_ulong, c_str
    from xgboost.objective import _grad_arrinf

    n_rows = dtrain.num_row()
    # Booster.predict(dtrain, output_margin=True, training=True)'s request
    request = c_str(
        json.dumps(
            {
                "type": 1,  # output_margin
                "training": True,
                "iteration_begin": 0,
                "iteration_end": 0,
                "strict_shape": False,
            }
        )
    )

    def boost_round(booster: xgb.Booster, iteration: int) -> None:
        predictions = ctypes.POINTER(ctypes.c_float)()
        shape = ctypes.POINTER(c_bst_ulong)()
        dims = c_bst_ulong()
        _check_call(
            _LIB.XGBoosterPredictFromDMatrix(
                booster.handle,
                dtrain.handle,
                request,
                ctypes.byref(shape),
                ctypes.byref(dims),
                ctypes.byref(predictions),
            )
        )
        margin = _prediction_output(shape, dims, predictions, False)
        grad, hess = objective(margin, dtrain)
        if not (
            isinstance(grad, np.ndarray)
            and isinstance(hess, np.ndarray)
            and grad.shape == hess.shape == (n_rows,)
        ):
            raise ValueError("the objective must return one gradient and hessian per row")
        _check_call(
            _LIB.XGBoosterTrainOneIter(
                booster.handle,
                dtrain.handle,
                iteration,
                _grad_arrinf(grad, n_rows),
                _grad_arrinf(hess, n_rows),
            )
        )

    return _train_rounds(params, dtrain, num_boost_round, boost_round, needs_rows=True)


def train_builtin(
    params: dict, dtrain: xgb.DMatrix, num_boost_round: int, reset: bool = True
) -> xgb.Booster:
    """`xgboost.train(params, dtrain, num_boost_round)` (no evals, callbacks, early stopping,
    custom objective or metric): the objective named in `params`, each round XGBoost's
    `XGBoosterUpdateOneIter` as `Booster.update` calls it. `reset=False` keeps the training
    caches xgboost.train's final reset frees (the same model: a caller refitting at every
    checkpoint saves the reset's cost)."""
    from xgboost.core import _LIB, _check_call

    def boost_round(booster: xgb.Booster, iteration: int) -> None:
        _check_call(
            _LIB.XGBoosterUpdateOneIter(booster.handle, ctypes.c_int(iteration), dtrain.handle)
        )

    return _train_rounds(params, dtrain, num_boost_round, boost_round, False, reset)


def _train_rounds(
    params: dict,
    dtrain: xgb.DMatrix,
    num_boost_round: int,
    boost_round: Callable[[xgb.Booster, int], None],
    needs_rows: bool,
    reset: bool = True,
) -> xgb.Booster:
    """xgboost.train's booster and loop around `boost_round` (one round's library calls)."""
    import xgboost as xgb

    booster = xgb.Booster(params, [dtrain])
    if needs_rows and dtrain.num_row() == 0:
        raise ValueError("train_with_objective needs training rows")
    # Booster.update's and Booster.predict's feature checks: the same matrix every round
    booster._assign_dmatrix_features(dtrain)
    for iteration in range(int(num_boost_round)):
        boost_round(booster, iteration)
        booster.eval_set([], iteration)  # what xgboost.train's callbacks run with no evals
    return booster.reset() if reset else booster


def fit_classifier(classifier: xgb.XGBClassifier, X: np.ndarray, y: np.ndarray, reset: bool = True):
    """`classifier.fit(X, y)` for rows and labels that are numpy arrays, its booster trained by
    `train_builtin`: the same parameters, DMatrix and booster. Anything else XGBClassifier.fit
    takes (a custom objective or metric, callbacks, early stopping, more than two classes)
    goes through XGBClassifier.fit itself. `reset=False`: as train_builtin's (the same
    model and predictions; a caller refitting at every checkpoint skips freeing the
    training caches of each fit)."""
    from xgboost import config_context
    from xgboost.sklearn import _wrap_evaluation_matrices

    if (
        type(X) is not np.ndarray
        or type(y) is not np.ndarray
        or callable(classifier.objective)
        or classifier.eval_metric is not None
        or classifier.callbacks
        or classifier.early_stopping_rounds
        or classifier.feature_types is not None
        or classifier.enable_categorical
    ):
        return classifier.fit(X, y)
    with config_context(verbosity=classifier.verbosity):
        classes = np.unique(y)
        if len(classes) > 2 or not (classes == np.arange(len(classes))).all():
            return classifier.fit(X, y)
        classifier.n_classes_ = len(classes)
        params = classifier.get_xgb_params()
        # XGBClassifier.fit's _configure_fit: no model to continue, no weights or metric
        _, _, params, _ = classifier._configure_fit(None, params, None)
        train_dmatrix, _ = _wrap_evaluation_matrices(
            missing=classifier.missing,
            X=X,
            y=y,
            group=None,
            qid=None,
            sample_weight=None,
            base_margin=None,
            feature_weights=None,
            eval_set=None,
            sample_weight_eval_set=None,
            base_margin_eval_set=None,
            eval_group=None,
            eval_qid=None,
            create_dmatrix=classifier._create_dmatrix,
            enable_categorical=classifier.enable_categorical,
            feature_types=None,
        )
        classifier._Booster = train_builtin(
            params, train_dmatrix, classifier.get_num_boosting_rounds(), reset
        )
        classifier.objective = params["objective"]
    return classifier
