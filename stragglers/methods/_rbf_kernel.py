"""The one-class SVMs of XGBOD scored from one kernel matrix, the same values as libsvm's.

XGBOD's default list (Zhao & Hryniewicki, 2018, Section 3.1) holds eleven one-class SVMs of
different nu, fitted on the same standardised rows with the same kernel width, and scores
every batch with each: libsvm's decision function of a row adds up, support vector by
support vector, `coef * K(row, sv)`, each kernel value `exp(-gamma * dot(d, d))` of the
difference d of the two rows (scikit-learn's dense libsvm, its `Kernel::k_function`, the dot
product BLAS's `ddot` as scikit-learn passes it), minus rho. The support vectors are rows of
the training set, so the eleven models evaluate the same kernel values over and over:
`RbfKernelRows` computes each pair's value once, by the same operations (the same `ddot`
from scipy's BLAS, called through its address, and the same `exp`), and
`one_class_decisions` adds them up per model in libsvm's order. Their fits likewise: the
solver computes kernel values of the training rows (`Kernel::kernel_rbf`, another formula of
the same kernel); `rbf_training_gram` computes them once with libsvm's operations and each
fit reads them as a precomputed kernel (`RbfKernelRows.fit_one_class`). tests/test_rbf_kernel.py
checks them against libsvm, value for value and model for model.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import get_cython_function_address, intrinsic

from stragglers.methods._grown_forests import rows_key
from stragglers.methods._platt_svm import (
    OneClassRbfSVM,
    fit_one_class_rbf,
    libsvm_rbf_fit,
    rbf_gamma,
)

# scipy's BLAS `ddot(int *n, double *x, int *incx, double *y, int *incy)`, the one
# scikit-learn's libsvm calls (sklearn.utils._cython_blas._dot)
DDOT_ADDRESS = get_cython_function_address("scipy.linalg.cython_blas", "ddot")


@intrinsic
def _ddot(typingctx, address, x, y):
    """ddot(len(x), x, 1, y, 1) through the function at `address` (x, y contiguous float64)."""
    if not (
        isinstance(address, types.Integer)
        and isinstance(x, types.Array)
        and isinstance(y, types.Array)
    ):
        return None
    signature = types.float64(address, x, y)

    def codegen(context, builder, sig, args):
        address_value, x_value, y_value = args
        int32 = ir.IntType(32)
        double_pointer = ir.DoubleType().as_pointer()
        function_type = ir.FunctionType(
            ir.DoubleType(),
            [
                int32.as_pointer(),
                double_pointer,
                int32.as_pointer(),
                double_pointer,
                int32.as_pointer(),
            ],
        )
        function = builder.inttoptr(address_value, function_type.as_pointer())
        x_array = context.make_array(sig.args[1])(context, builder, x_value)
        y_array = context.make_array(sig.args[2])(context, builder, y_value)
        length = builder.trunc(cgutils.unpack_tuple(builder, x_array.shape, 1)[0], int32)
        length_pointer = cgutils.alloca_once_value(builder, length)
        step_pointer = cgutils.alloca_once_value(builder, ir.Constant(int32, 1))
        return builder.call(
            function,
            [length_pointer, x_array.data, step_pointer, y_array.data, step_pointer],
        )

    return signature, codegen


@njit(cache=True)
def rbf_kernel_values(address, X, Y, gamma):  # pragma: no cover (compiled)
    """K[i, j] = exp(-gamma * ddot(X[i] - Y[j], X[i] - Y[j])), as libsvm's dense RBF kernel
    computes each pair (rows of the same width; `address`: DDOT_ADDRESS)."""
    n_rows, n_features = X.shape
    K = np.empty((n_rows, Y.shape[0]))
    difference = np.empty(n_features)
    for i in range(n_rows):
        for j in range(Y.shape[0]):
            for f in range(n_features):
                difference[f] = X[i, f] - Y[j, f]
            K[i, j] = math.exp(-gamma * _ddot(address, difference, difference))
    return K


@njit(cache=True)
def rbf_training_gram(address, X, gamma):  # pragma: no cover (compiled)
    """libsvm's kernel values of every pair of training rows as its solver computes them
    (`Kernel::kernel_rbf`, not `k_function`): exp(-gamma * (s[i] + s[j] - 2 * dot(X[i],
    X[j]))), s[i] = dot(X[i], X[i]), every dot BLAS's ddot. The pair's value does not depend
    on its order (the same products and sums), so each is computed once."""
    n_rows = X.shape[0]
    squares = np.empty(n_rows)
    for i in range(n_rows):
        squares[i] = _ddot(address, X[i], X[i])
    G = np.empty((n_rows, n_rows))
    for i in range(n_rows):
        for j in range(i, n_rows):
            value = math.exp(-gamma * (squares[i] + squares[j] - 2 * _ddot(address, X[i], X[j])))
            G[i, j] = value
            G[j, i] = value
    return G


@njit(cache=True)
def one_class_decisions(K, support, coefficients, rho):  # pragma: no cover (compiled)
    """libsvm's one-class decision value of each row of K: the sum, in support vector order,
    of each coefficient times the row's kernel value with that vector (its column of K),
    minus rho."""
    decisions = np.empty(K.shape[0])
    for i in range(K.shape[0]):
        total = 0.0
        for t in range(support.shape[0]):
            total += coefficients[t] * K[i, support[t]]
        decisions[i] = total - rho
    return decisions


# the most kernel values kept for one matrix (32 MB): beyond, each model asks libsvm
MAX_SHARED_VALUES = 4_000_000


class RbfKernelRows:
    """The RBF kernel values of a batch of rows with a set of training rows, computed once
    for every model fitted on those rows with the same width, for the last batches asked;
    and the training rows' values as libsvm's solver computes them, for the models' fits."""

    def __init__(self) -> None:
        self._training_key: tuple | None = None
        self._values: dict[tuple, np.ndarray] = {}
        self._gram: tuple[tuple, float, np.ndarray] | None = None

    def fit_one_class(
        self, X: np.ndarray, nu, gamma, tol, shrinking, cache_size, max_iter, degree, coef0
    ):
        """`fit_one_class_rbf(X, ...)` (X finite float64 in C order): libsvm's one-class fit on
        the training rows' kernel values (`rbf_training_gram`, shared by the models of one
        width) given as a precomputed kernel. The solver reads the same values (each pair's,
        as a float, and the diagonal's), so it makes the same model, with the same seed drawn
        from numpy's global random state; its support vectors are the training rows at
        `support`. Rows too many to keep their kernel values: libsvm's RBF fit."""
        settings = {
            "nu": nu,
            "tol": tol,
            "shrinking": shrinking,
            "cache_size": cache_size,
            "max_iter": max_iter,
            "degree": degree,
            "coef0": coef0,
        }
        if X.shape[0] * X.shape[0] > MAX_SHARED_VALUES:
            return fit_one_class_rbf(X, gamma=gamma, **settings)
        gamma_value = rbf_gamma(X, gamma)
        key = rows_key(X)
        if self._gram is None or self._gram[0] != key or self._gram[1] != gamma_value:
            gram = rbf_training_gram(DDOT_ADDRESS, X, float(gamma_value))
            self._gram = (key, gamma_value, gram)
        support, _, n_support, dual_coef, intercept, prob_a, prob_b = libsvm_rbf_fit(
            self._gram[2],
            np.ones(X.shape[0], dtype=np.float64),
            svm_type=2,  # one_class
            kernel="precomputed",
            class_weight=np.empty(0),
            C=0.0,
            gamma=gamma_value,
            epsilon=0.0,
            **settings,
        )
        return OneClassRbfSVM(
            support,
            np.ascontiguousarray(X[support]),
            n_support,
            dual_coef,
            intercept,
            prob_a,
            prob_b,
            gamma=gamma_value,
            degree=degree,
            cache_size=cache_size,
            coef0=coef0,
        )

    def decision_function(self, X: np.ndarray, training: np.ndarray, model) -> np.ndarray | None:
        """libsvm's one-class decision values of rows X (finite float64, `training`'s
        width) for `model` (a OneClassRbfSVM fitted on `training`, its support vectors
        rows of it), or None when its support vectors are not `training`'s rows (the
        caller asks libsvm)."""
        support = np.asarray(model.support, dtype=np.intp)
        if (
            X.shape[0] * training.shape[0] > MAX_SHARED_VALUES
            or model.dual_coef.shape[0] != 1
            or model.intercept.shape != (1,)
            or support.shape[0] != model.support_vectors.shape[0]
            or not np.array_equal(training[support], model.support_vectors)
        ):
            return None
        training_key = rows_key(training)
        if training_key != self._training_key:
            self._training_key, self._values = training_key, {}
        key = (float(model.gamma), rows_key(X))
        K = self._values.get(key)
        if K is None:
            K = rbf_kernel_values(
                DDOT_ADDRESS,
                np.ascontiguousarray(X),
                np.ascontiguousarray(training),
                float(model.gamma),
            )
            if len(self._values) >= 2:  # the training rows' values and the last batch's
                self._values.pop(next(iter(self._values)))
            self._values[key] = K
        # libsvm keeps rho = -intercept and subtracts it
        rho = -float(model.intercept[0])
        return one_class_decisions(K, support, np.ascontiguousarray(model.dual_coef[0]), rho)
