"""Grabit's boosting rounds without XGBoost's per-round Python overhead.

`xgboost.train(params, dtrain, rounds, obj=objective)` runs, per round, a margin prediction
on the training matrix, the custom objective and one boosting step, and checks the matrix's
feature names and the gradients' layout each time; profiles of Grabit found that Python side
comparable to the C++ boosting itself. `train_with_objective` makes the same library calls
in the same order (the booster's margin prediction, `XGBoosterTrainOneIter` with the
objective's gradients, the empty evaluation of a run without `evals`, and the final
`reset`), checking once, so the trees are XGBoost's own. Pinned by
tests/test_xgb_training.py against `xgboost.train` (requirements.lock): the saved models are
the same bytes.
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
    import xgboost as xgb
    from xgboost.core import _LIB, _check_call, _prediction_output, c_bst_ulong, c_str
    from xgboost.objective import _grad_arrinf

    booster = xgb.Booster(params, [dtrain])
    n_rows = dtrain.num_row()
    if n_rows == 0:
        raise ValueError("train_with_objective needs training rows")
    # Booster.update's and Booster.predict's feature checks: the same matrix every round
    booster._assign_dmatrix_features(dtrain)
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
    for iteration in range(int(num_boost_round)):
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
        booster.eval_set([], iteration)  # what xgboost.train's callbacks run with no evals
    return booster.reset()
