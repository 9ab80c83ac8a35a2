"""scikit-learn's gradient boosting regressor with each tree grown by the tree module's own
builder, the same trees and predictions as scikit-learn's.

`GradientBoostingRegressor.fit` grows one `DecisionTreeRegressor` per stage through the
estimator's `fit(check_input=False)`, which still re-checks the sample weights
(`_check_sample_weight`, a full `check_array`), checks the tree is fitted before pruning
nothing, and goes through scikit-learn's fit context: on a job's finished tasks (tens to a few
hundred rows) that costs a third to all of what growing the tree costs.
`DirectTreeGradientBoostingRegressor` keeps `fit` (its parameters checked once, not again by
the estimators fitted inside), its validation, initial estimate, loss, stage loop and training
scores, and replaces `_fit_stage` by the same steps for the stages it covers: the negative
gradient from the loss, a `DecisionTreeRegressor` with the settings scikit-learn gives it,
grown as `BaseDecisionTree._fit` grows it (squared-error criterion, best splitter drawing its
seed from the boosting's random state, depth-first builder), then scikit-learn's own leaf
update (`_update_terminal_regions`). What it does not cover (other losses, subsampling, sparse
rows, `max_features`, `max_leaf_nodes`, fractional leaf or split sizes, pruning, weights that
the tree would convert) goes to scikit-learn's `_fit_stage`. tests/test_nurd_regressor_fits.py
compares it with scikit-learn's estimator, tree for tree and value for value.
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy.sparse import issparse
from sklearn import config_context
from sklearn._loss.loss import HalfSquaredError
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.ensemble._gb import _update_terminal_regions
from sklearn.tree import DecisionTreeRegressor
from sklearn.tree._criterion import MSE
from sklearn.tree._splitter import BestSplitter
from sklearn.tree._tree import DepthFirstTreeBuilder, Tree

# BaseDecisionTree._fit's depth for max_depth=None
UNLIMITED_DEPTH = np.iinfo(np.int32).max


class DirectTreeGradientBoostingRegressor(GradientBoostingRegressor):
    """`GradientBoostingRegressor` whose stages grow their trees with the builder directly."""

    def fit(self, X, y, sample_weight=None, monitor=None):
        """scikit-learn's fit with its parameters checked once, as its fit checks them, and not
        again by the estimators it fits inside (the initial estimate, the trees of stages left
        to scikit-learn's `_fit_stage`): those checks compute nothing the fit uses."""
        self._validate_params()
        with config_context(skip_parameter_validation=True):
            return super().fit(X, y, sample_weight=sample_weight, monitor=monitor)

    def _grows_directly(self, X, sample_weight) -> bool:
        """Whether this stage is one `_fit_stage` below reproduces step for step."""
        return (
            type(self._loss) is HalfSquaredError
            and self.n_trees_per_iteration_ == 1
            and self.subsample >= 1.0
            and not issparse(X)
            and self.max_features is None
            and self.max_leaf_nodes is None
            and self.ccp_alpha == 0.0
            and isinstance(self.min_samples_leaf, numbers.Integral)
            and isinstance(self.min_samples_split, numbers.Integral)
            # the weights the tree's _check_sample_weight returns unchanged
            and sample_weight.dtype == np.float64
            and sample_weight.ndim == 1
            and sample_weight.flags.c_contiguous
            and len(sample_weight) == X.shape[0]
        )

    def _fit_stage(
        self,
        i,
        X,
        y,
        raw_predictions,
        sample_weight,
        sample_mask,
        random_state,
        X_csc=None,
        X_csr=None,
    ):
        if not self._grows_directly(X, sample_weight):
            return super()._fit_stage(
                i, X, y, raw_predictions, sample_weight, sample_mask, random_state, X_csc, X_csr
            )
        neg_gradient = -self._loss.gradient(
            y_true=y, raw_prediction=raw_predictions, sample_weight=None
        )
        neg_g_view = neg_gradient.reshape((-1, 1))
        tree = DecisionTreeRegressor(
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
        grow_best_split_tree(tree, X, neg_g_view[:, 0], sample_weight)
        _update_terminal_regions(
            self._loss,
            tree.tree_,
            X,
            y,
            neg_g_view[:, 0],
            raw_predictions,
            sample_weight,
            sample_mask,
            learning_rate=self.learning_rate,
            k=0,
        )
        self.estimators_[i, 0] = tree
        return raw_predictions


def grow_best_split_tree(tree, X, targets, sample_weight):
    """`tree.fit(X, targets, sample_weight, check_input=False)` for a `DecisionTreeRegressor`
    with the squared-error criterion, the best splitter, every feature, integer leaf and split
    sizes, no pruning and a RandomState object as its random state, on validated float32 rows
    and float64 weights: the steps of `BaseDecisionTree._fit` for those settings."""
    n_samples, n_features = X.shape
    targets = np.reshape(targets, (-1, 1))
    if targets.dtype != np.float64 or not targets.flags.contiguous:
        targets = np.ascontiguousarray(targets, dtype=np.float64)
    tree.n_features_in_ = n_features
    tree.n_outputs_ = 1
    tree.max_features_ = n_features
    min_samples_leaf = tree.min_samples_leaf
    min_samples_split = max(tree.min_samples_split, 2 * min_samples_leaf)
    min_weight_leaf = tree.min_weight_fraction_leaf * np.sum(sample_weight)
    max_depth = UNLIMITED_DEPTH if tree.max_depth is None else tree.max_depth
    # the splitter draws its seed from the tree's random state (the boosting's, shared)
    splitter = BestSplitter(
        MSE(1, n_samples), n_features, min_samples_leaf, min_weight_leaf, tree.random_state, None
    )
    tree.tree_ = Tree(n_features, np.array([1], dtype=np.intp), 1)
    builder = DepthFirstTreeBuilder(
        splitter,
        min_samples_split,
        min_samples_leaf,
        min_weight_leaf,
        max_depth,
        tree.min_impurity_decrease,
    )
    builder.build(tree.tree_, X, targets, sample_weight, None)
    return tree
