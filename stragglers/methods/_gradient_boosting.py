"""scikit-learn's gradient boosting regressor with its stages grown in one compiled call, the
same trees and predictions as scikit-learn's.

`GradientBoostingRegressor.fit` grows one `DecisionTreeRegressor` per stage through the
estimator's `fit(check_input=False)`, in Python around scikit-learn's tree builder, whose
virtual calls per candidate split and sorts of every node's rows by every feature are most of
a NURD replay's CPU under `paper` (one fit of 100 trees per checkpoint).
`DirectTreeGradientBoostingRegressor` keeps `fit` (its parameters checked once, not again by
the estimators fitted inside), its validation, initial estimate, loss and stage loop's
bookkeeping, and grows the stages it covers with `_boosting_kernel.grow_boosting_stages`: the
same seed per tree drawn from the boosting's random state, the same trees grown with the same
arithmetic, the same raw predictions; each tree becomes a `DecisionTreeRegressor` holding a
`Tree` restored from those nodes, and each stage's training score is computed by the loss as
scikit-learn computes it. What it does not cover (other losses, subsampling, sparse rows,
`max_features`, `max_leaf_nodes`, fractional leaf or split sizes, pruning, early stopping, a
monitor, verbose output) goes to scikit-learn's `_fit_stages`.
tests/test_nurd_regressor_fits.py compares it with scikit-learn's estimator, tree for tree and
value for value.
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy.sparse import issparse
from sklearn import config_context
from sklearn._loss.loss import HalfSquaredError
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.tree import DecisionTreeRegressor
from sklearn.tree._tree import NODE_DTYPE, Tree

from stragglers.methods._boosting_kernel import RAND_R_MAX, grow_boosting_stages

# BaseDecisionTree._fit's depth for max_depth=None
UNLIMITED_DEPTH = np.iinfo(np.int32).max
# GradientBoostingRegressor._fit_stages's factor on the half squared error's training score
SQUARED_ERROR_SCORE_FACTOR = 2


class DirectTreeGradientBoostingRegressor(GradientBoostingRegressor):
    """`GradientBoostingRegressor` whose stages grow their trees with the builder directly."""

    def fit(self, X, y, sample_weight=None, monitor=None):
        """scikit-learn's fit with its parameters checked once, as its fit checks them, and not
        again by the estimators it fits inside (the initial estimate, the trees of stages left
        to scikit-learn's `_fit_stage`): those checks compute nothing the fit uses."""
        self._validate_params()
        with config_context(skip_parameter_validation=True):
            return super().fit(X, y, sample_weight=sample_weight, monitor=monitor)

    def _grows_in_one_call(self, X, sample_weight, begin_at_stage, monitor) -> bool:
        """Whether `_fit_stages` below reproduces scikit-learn's stages step for step."""
        return (
            type(self._loss) is HalfSquaredError
            and self.n_trees_per_iteration_ == 1
            and self.subsample >= 1.0
            and self.n_iter_no_change is None
            and monitor is None
            and not self.verbose
            and begin_at_stage < self.n_estimators
            and not issparse(X)
            and X.dtype == np.float32
            and self.max_features is None
            and self.max_leaf_nodes is None
            and self.ccp_alpha == 0.0
            and isinstance(self.min_samples_leaf, numbers.Integral)
            and isinstance(self.min_samples_split, numbers.Integral)
            # the weights the tree's _check_sample_weight returns unchanged, some positive
            and sample_weight.dtype == np.float64
            and sample_weight.ndim == 1
            and sample_weight.flags.c_contiguous
            and len(sample_weight) == X.shape[0]
            and bool(np.any(sample_weight != 0))
        )

    def _fit_stages(
        self,
        X,
        y,
        raw_predictions,
        sample_weight,
        random_state,
        X_val,
        y_val,
        sample_weight_val,
        begin_at_stage=0,
        monitor=None,
    ):
        if not self._grows_in_one_call(X, sample_weight, begin_at_stage, monitor):
            return super()._fit_stages(
                X,
                y,
                raw_predictions,
                sample_weight,
                random_state,
                X_val,
                y_val,
                sample_weight_val,
                begin_at_stage=begin_at_stage,
                monitor=monitor,
            )
        X = np.ascontiguousarray(X)
        n_features = X.shape[1]
        stages = range(begin_at_stage, self.n_estimators)
        # each stage's splitter draws its seed from the shared random state, nothing else does
        # (one call for all stages draws the same numbers as one call per stage)
        seeds = random_state.randint(0, RAND_R_MAX, size=len(stages)).astype(np.int64)
        # the rows the splitter works on (positive weights), sorted stably by each feature
        rows = np.flatnonzero(sample_weight != 0)
        presorted = np.empty((n_features, len(rows)), dtype=np.int64)
        tie_free = np.empty(n_features, dtype=bool)
        for feature in range(n_features):
            column = X[rows, feature]
            order = np.argsort(column, kind="stable")
            presorted[feature] = rows[order]
            ordered = column[order]
            tie_free[feature] = bool(np.all(ordered[1:] != ordered[:-1]))
        max_depth = UNLIMITED_DEPTH if self.max_depth is None else self.max_depth
        # a tree of that depth, or with one row per leaf at most
        capacity = 2 * len(rows) - 1
        if max_depth < 30:
            capacity = min(capacity, 2 ** (max_depth + 1) - 1)
        shape = (len(stages), capacity)
        # the kernel writes each field of scikit-learn's node records in place
        records = np.zeros(shape, dtype=NODE_DTYPE)
        values = np.zeros(shape)
        node_counts = np.zeros(len(stages), dtype=np.int64)
        depths = np.zeros(len(stages), dtype=np.int64)
        raw_after = np.empty((len(stages), X.shape[0]))
        raw = np.ascontiguousarray(raw_predictions[:, 0], dtype=np.float64)
        min_samples_split = max(self.min_samples_split, 2 * self.min_samples_leaf)
        grow_boosting_stages(
            X,
            np.ascontiguousarray(y, dtype=np.float64),
            raw,
            sample_weight,
            seeds,
            float(self.learning_rate),
            max_depth,
            min_samples_split,
            self.min_samples_leaf,
            self.min_weight_fraction_leaf * np.sum(sample_weight),
            float(self.min_impurity_decrease),
            rows,
            presorted,
            tie_free,
            records["left_child"],
            records["right_child"],
            records["feature"],
            records["threshold"],
            records["impurity"],
            records["n_node_samples"],
            records["weighted_n_node_samples"],
            records["missing_go_to_left"],
            values,
            node_counts,
            depths,
            raw_after,
        )
        raw_predictions[:, 0] = raw
        n_classes = np.array([1], dtype=np.intp)
        for stage, i in enumerate(stages):
            count = int(node_counts[stage])
            tree = self._stage_tree(random_state)
            tree.n_features_in_ = n_features
            tree.n_outputs_ = 1
            tree.max_features_ = n_features
            tree.tree_ = Tree(n_features, n_classes, 1)
            tree.tree_.__setstate__(
                {
                    "max_depth": int(depths[stage]),
                    "node_count": count,
                    "nodes": records[stage, :count],
                    "values": values[stage, :count].reshape(count, 1, 1),
                }
            )
            self.estimators_[i, 0] = tree
        # each stage's training score, as the loss computes it (its Cython loss 0.5 d d per
        # row, then np.average's weighted sum over a row and division by the weights' sum)
        differences = raw_after - y
        losses = 0.5 * differences * differences
        self.train_score_[stages.start :] = SQUARED_ERROR_SCORE_FACTOR * (
            np.multiply(losses, sample_weight).sum(axis=1) / sample_weight.sum()
        )
        return self.n_estimators

    def _stage_tree(self, random_state) -> DecisionTreeRegressor:
        """The unfitted tree `_fit_stage` makes for a stage."""
        return DecisionTreeRegressor(
            criterion="squared_error",
            splitter="best",
            max_depth=self.max_depth,
            min_samples_split=self.min_samples_split,
            min_samples_leaf=self.min_samples_leaf,
            min_weight_fraction_leaf=self.min_weight_fraction_leaf,
            min_impurity_decrease=self.min_impurity_decrease,
            max_features=self.max_features,
            max_leaf_nodes=self.max_leaf_nodes,
            random_state=random_state,
            ccp_alpha=self.ccp_alpha,
        )
