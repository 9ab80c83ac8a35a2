"""Isolation forests fitted and scored without scikit-learn's per-tree overhead, the same
forests and scores as scikit-learn's.

Fitting: scikit-learn's `IsolationForest` builds each of its trees (at most 256 rows here) in
a fraction of the time its bagging spends around the build: cloning the tree template
(`get_params`, `inspect.signature`), three new `RandomState` objects per tree (each seeded
afresh from the OS before its seed is set), the tree's parameter validation, and joblib's
dispatch. `SequentialIsolationForest._fit` replaces `BaseBagging._fit` with the same steps in
a plain loop: the same seeds per tree, the tree's random state and the rows and features
drawn from those seeds by one `RandomState` re-seeded (the same streams as fresh ones), and
each tree grown by the tree module's own builder with the criterion, splitter and settings
`BaseDecisionTree._fit` gives an `ExtraTreeRegressor` of `max_features=1` on validated float32
rows. What it does not cover (sample weights, sparse rows, fit parameters, verbose output,
metadata routing, a warm start adding no trees: its warning or error) goes to
scikit-learn's own `_fit`. `fit` around it takes `IsolationForest.fit`'s steps in its order
(input validation, the targets, `max_samples_`, the depth limit, path lengths, offset), the
trees' average path lengths computed without validating each tree's leaf sizes, all trees'
nodes in one element-wise pass, and kept for a warm start's trees.

Scoring: scikit-learn scores rows tree by tree through joblib (`Parallel` over `delayed`
calls, sequential by default), and each dispatched call sets up scikit-learn's config and
warning filters again: at the replay's batch sizes (tens of rows, 100 trees, a score at every
checkpoint) that dispatch costs more than the trees' own `apply`.
`SequentialIsolationForest` adds up the same per-tree path lengths in the same tree order
with the same numpy operations in a plain loop, so the depths, and the scores, are the same
bits; each tree's leaves come from its `tree_.apply` without the estimator's per-call checks
(the forest validated the rows); validation, chunking and the offset stay scikit-learn's.

`FastIForest` is PyOD's IForest fitting one; its fit scores the training rows once
(`fit_decision_function`), where PyOD's scores them for the offset and again for its
decision scores, and its decision_function validates dense rows once (PyOD's `check_array`),
where PyOD's passes them to scikit-learn's validation again and its scores to `invert_order`'s. tests/test_isolation_scores.py checks both against the library, tree for
tree and value for value.
"""

from __future__ import annotations

import numbers
from warnings import warn

import numpy as np
import pyod.models.iforest as pyod_iforest
from pyod.utils.utility import invert_order
from scipy.sparse import issparse
from sklearn.base import _fit_context
from sklearn.ensemble import IsolationForest
from sklearn.ensemble._bootstrap import _get_n_samples_bootstrap
from sklearn.tree._criterion import MSE
from sklearn.tree._splitter import RandomSplitter
from sklearn.tree._tree import DepthFirstTreeBuilder, Tree
from sklearn.utils import check_array, check_random_state
from sklearn.utils.metadata_routing import _routing_enabled
from sklearn.utils.random import sample_without_replacement
from sklearn.utils.validation import (
    _check_n_features,
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)

# the settings PyOD's IForest passes on to scikit-learn's IsolationForest, n_estimators aside
FOREST_PARAMS = (
    "max_samples",
    "contamination",
    "max_features",
    "bootstrap",
    "n_jobs",
    "random_state",
    "verbose",
)

# the bound of the seeds bagging draws, and of the random state it gives each tree
MAX_SEED = np.iinfo(np.int32).max

# the tree template IsolationForest._get_estimator makes (what the builder below assumes)
TREE_TEMPLATE = {
    "criterion": "squared_error",
    "splitter": "random",
    "max_features": 1,
    "min_samples_split": 2,
    "min_samples_leaf": 1,
    "min_weight_fraction_leaf": 0.0,
    "max_leaf_nodes": None,
    "min_impurity_decrease": 0.0,
    "ccp_alpha": 0.0,
    "monotonic_cst": None,
}


def _draw_indices(stream: np.random.RandomState, bootstrap: bool, population: int, size: int):
    """bagging's `_generate_indices`: `size` of range(population), with or without
    replacement."""
    if bootstrap:
        return stream.randint(0, population, size)
    return sample_without_replacement(population, size, random_state=stream)


def _all_or_drawn(stream: np.random.RandomState, bootstrap: bool, population: int, size: int):
    """`_draw_indices`: without replacement, all of the population is range(population), as
    scikit-learn's reservoir sampling gives it (the method its `auto` picks for all of a
    population) without drawing from the stream; else the draw."""
    if not bootstrap and size == population:
        return np.arange(population)
    return _draw_indices(stream, bootstrap, population, size)


def average_path_lengths(leaf_sizes: np.ndarray) -> np.ndarray:
    """scikit-learn's `_average_path_length` of a tree's node sizes (a 1-d integer array),
    with its operations, minus the validation of the array (`check_array`)."""
    sizes = leaf_sizes.reshape((1, -1))
    lengths = np.zeros(sizes.shape)
    one_or_none = sizes <= 1
    two = sizes == 2
    more = ~np.logical_or(one_or_none, two)
    lengths[one_or_none] = 0.0
    lengths[two] = 1.0
    lengths[more] = (
        2.0 * (np.log(sizes[more] - 1.0) + np.euler_gamma) - 2.0 * (sizes[more] - 1.0) / sizes[more]
    )
    return lengths.reshape(leaf_sizes.shape)


def _split_like(values: np.ndarray, parts: list[np.ndarray]) -> list[np.ndarray]:
    """`values` (the parts' elements back to back) cut into arrays of the parts' lengths."""
    return np.split(values, np.cumsum([len(part) for part in parts])[:-1])


def per_tree_average_path_lengths(node_sizes: list[np.ndarray]) -> list[np.ndarray]:
    """`average_path_lengths` of each tree's node sizes, by one call on all trees' sizes
    back to back: each element's value comes from its own element-wise operations, so
    every tree's values are those of its own call (a hundred calls' overhead saved per fit)."""
    if not node_sizes:
        return []
    return _split_like(average_path_lengths(np.concatenate(node_sizes)), node_sizes)


def per_tree_node_path_lengths(lengths, depths) -> tuple[np.ndarray, ...]:
    """Each tree's `depths + lengths - 1.0`, node by node, by one sum of all trees' nodes
    back to back (element-wise: the same values as tree by tree)."""
    if not lengths:
        return ()
    summed = np.concatenate(depths) + np.concatenate(lengths) - 1.0
    return tuple(_split_like(summed, list(lengths)))


class SequentialIsolationForest(IsolationForest):
    """scikit-learn's IsolationForest building and scoring its trees in a loop instead of
    through bagging's clones and joblib."""

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """IsolationForest.fit (see `_fit_forest`)."""
        self._fit_forest(X, sample_weight)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_decision_function(self, X):
        """`fit(X)`, then `decision_function(X)`: on dense rows, the training rows' scores
        that fit computes for the offset are reused (the rows validated the same way give
        the same scores)."""
        training_scores = self._fit_forest(X, None)
        if training_scores is None:
            return self.decision_function(X)
        return training_scores - self.offset_

    def checked_decision_function(self, X: np.ndarray) -> np.ndarray:
        """`decision_function(X)` of dense rows that PyOD's `check_array` has validated (a
        2-d numeric array, finite): scikit-learn's validation of them again comes down to
        the float32 conversion and the feature count, done here alone."""
        rows = np.asarray(X, dtype=np.float32)
        _check_n_features(self, rows, reset=False)
        return self._score_samples(rows) - self.offset_

    def _fit_forest(self, X, sample_weight):
        """IsolationForest.fit's steps, in its order, with the trees grown by `_fit`;
        returns the scores of the validated dense training rows when the offset needed
        them, else None."""
        X = validate_data(self, X, accept_sparse=["csc"], dtype=np.float32, ensure_all_finite=False)
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=None)
        if issparse(X):
            X.sort_indices()
        # the trees' regression targets, from the forest's random state
        targets = check_random_state(self.random_state).uniform(size=X.shape[0])
        n_samples = X.shape[0]
        if isinstance(self.max_samples, str) and self.max_samples == "auto":
            max_samples = min(256, n_samples)
        elif isinstance(self.max_samples, numbers.Integral):
            if self.max_samples > n_samples:
                warn(
                    f"max_samples ({self.max_samples}) is greater than the total number of "
                    f"samples ({n_samples}). max_samples will be set to n_samples for "
                    "estimation.",
                    stacklevel=2,
                )
                max_samples = n_samples
            else:
                max_samples = self.max_samples
        else:  # a fraction of the rows
            max_samples = int(self.max_samples * X.shape[0])
        self.max_samples_ = max_samples
        max_depth = int(np.ceil(np.log2(max(max_samples, 2))))
        kept = self._n_grown()  # a warm start's trees, whose path lengths are known
        known = list(
            zip(
                getattr(self, "_average_path_length_per_tree", ()),
                getattr(self, "_decision_path_lengths", ()),
            )
        )
        self._fit(
            X,
            targets,
            max_samples=max_samples,
            max_depth=max_depth,
            sample_weight=sample_weight,
            check_input=False,
        )
        grown = [tree.tree_ for tree in self.estimators_[kept:]]
        self._average_path_length_per_tree, self._decision_path_lengths = zip(
            *known[:kept],
            *zip(
                per_tree_average_path_lengths([tree.n_node_samples for tree in grown]),
                [tree.compute_node_depths() for tree in grown],
            ),
        )
        # each node's term of a row's depth, as _compute_score_samples adds it per leaf
        self._node_path_lengths = per_tree_node_path_lengths(
            self._average_path_length_per_tree, self._decision_path_lengths
        )
        if self.contamination == "auto":
            self.offset_ = -0.5  # the paper's threshold, 0.5, negated as the scores are
            return None
        if issparse(X):
            X = X.tocsr()  # _score_samples reads rows
            self.offset_ = np.percentile(self._score_samples(X), 100.0 * self.contamination)
            return None
        training_scores = self._score_samples(X)
        self.offset_ = np.percentile(training_scores, 100.0 * self.contamination)
        return training_scores

    def _fit(
        self,
        X,
        y,
        max_samples=None,
        max_depth=None,
        check_input=True,
        sample_weight=None,
        **fit_params,
    ):
        if (
            sample_weight is not None
            or fit_params
            or issparse(X)
            or self.verbose
            or self.oob_score
            or _routing_enabled()
            or self.n_estimators <= self._n_grown()
        ):
            return super()._fit(
                X,
                y,
                max_samples=max_samples,
                max_depth=max_depth,
                check_input=check_input,
                sample_weight=sample_weight,
                **fit_params,
            )
        # BaseBagging._fit's settings, in its order (the same random state drawn from)
        random_state = check_random_state(self.random_state)
        n_samples = X.shape[0]
        self._n_samples = n_samples
        y = self._validate_y(y)
        self._validate_estimator(self._get_estimator())
        if max_depth is not None:
            self.estimator_.max_depth = max_depth
        if max_samples is None:
            max_samples = self.max_samples
        max_samples = _get_n_samples_bootstrap(n_samples, max_samples, None)
        if not self.bootstrap and max_samples > n_samples:
            raise ValueError(
                f"Effective max_samples={max_samples} must be <= n_samples="
                f"{n_samples} to be able to sample without replacement."
            )
        self._max_samples = max_samples
        if isinstance(self.max_features, numbers.Integral):
            max_features = self.max_features
        elif isinstance(self.max_features, float):
            max_features = int(self.max_features * self.n_features_in_)
        if max_features > self.n_features_in_:
            raise ValueError("max_features must be <= n_features")
        max_features = max(1, int(max_features))
        self._max_features = max_features
        self._sample_weight = None
        if hasattr(self, "oob_score_") and self.warm_start:
            del self.oob_score_
        if not self.warm_start or not hasattr(self, "estimators_"):
            self.estimators_ = []
            self.estimators_features_ = []
        n_more_estimators = self.n_estimators - len(self.estimators_)
        if self.warm_start and len(self.estimators_) > 0:
            # skip the seeds of the trees already grown
            random_state.randint(MAX_SEED, size=len(self.estimators_))
        seeds = random_state.randint(MAX_SEED, size=n_more_estimators)
        self._seeds = seeds
        template = self.estimator_
        settings = template.get_params(deep=False)
        if {name: settings[name] for name in TREE_TEMPLATE} != TREE_TEMPLATE:
            raise ValueError(f"an isolation tree template other than {TREE_TEMPLATE}")
        # BaseDecisionTree._fit's targets: one output, float64, contiguous
        targets = np.reshape(np.atleast_1d(y), (-1, 1))
        if targets.dtype != np.float64 or not targets.flags.contiguous:
            targets = np.ascontiguousarray(targets, dtype=np.float64)
        # one RandomState re-seeded for each of bagging's fresh ones: the same streams
        stream = np.random.RandomState(0)
        for seed in seeds:
            tree, features = self._grow_tree(X, targets, seed, template, settings, stream)
            self.estimators_.append(tree)
            self.estimators_features_.append(features)
        return self

    def _n_grown(self) -> int:
        """The trees a warm start keeps."""
        return len(self.estimators_) if self.warm_start and hasattr(self, "estimators_") else 0

    def _grow_tree(self, X, targets, seed, template, settings, stream):
        """The tree `_parallel_build_estimators` fits from `seed` (its template `template`,
        whose parameters are `settings`), and the features it reads."""
        n_samples, n_features = X.shape
        stream.seed(seed)
        tree_seed = stream.randint(MAX_SEED)  # _set_random_states: the tree's random state
        all_features = not self.bootstrap_features and self._max_features == n_features
        all_rows = not self.bootstrap and self._max_samples == n_samples
        if not (all_features and all_rows):  # else nothing is drawn before the tree's seed
            stream.seed(seed)  # _generate_bagging_indices: features, then rows
        features = _all_or_drawn(stream, self.bootstrap_features, n_features, self._max_features)
        if all_rows:  # every row once
            weights = np.ones(n_samples)
        else:
            rows = _draw_indices(stream, self.bootstrap, n_samples, self._max_samples)
            # the tree takes sample weights, so bagging samples rows by weighting them
            weights = np.bincount(rows, minlength=n_samples).astype(np.float64)
        if self.bootstrap_features or self._max_features != n_features:
            X = X[:, features]
        tree = type(template)(**{**settings, "random_state": tree_seed})
        # BaseDecisionTree._fit(check_input=False) with TREE_TEMPLATE's settings: a
        # squared-error criterion, the random splitter drawing one feature per split, no
        # minimum weight (its fraction is 0), depth-first growth, no pruning
        tree.n_features_in_ = X.shape[1]
        tree.n_outputs_ = 1
        tree.max_features_ = 1
        max_depth = MAX_SEED if settings["max_depth"] is None else settings["max_depth"]
        stream.seed(tree_seed)  # the splitter draws its own seed from the tree's stream
        splitter = RandomSplitter(MSE(1, n_samples), 1, 1, 0.0, stream, None)
        tree.tree_ = Tree(X.shape[1], np.array([1], dtype=np.intp), 1)
        builder = DepthFirstTreeBuilder(splitter, 2, 1, 0.0, max_depth, 0.0)
        builder.build(tree.tree_, X, targets, weights, None)
        return tree, features

    def _compute_score_samples(self, X, subsample_features):
        (scores,) = self.prefix_score_samples(X, subsample_features, (len(self.estimators_),))
        return scores

    def prefix_score_samples(self, X, subsample_features, sizes) -> list[np.ndarray]:
        """`_compute_score_samples(X, subsample_features)` of the forests made of the first n
        trees, for each n of `sizes` (increasing, at most the forest's trees), in one pass:
        a forest's depths are added up tree by tree in order, so those of its first n trees
        are the depths of the forest of n trees after its last tree."""
        depths = np.zeros(X.shape[0], order="f")
        # _average_path_length([self._max_samples]): its list becomes this array
        average_path_length_max_samples = average_path_lengths(np.asarray([self._max_samples]))
        scores = []
        wanted = iter(sizes)
        size = next(wanted, None)
        for tree_idx, (tree, features) in enumerate(
            zip(self.estimators_, self.estimators_features_)
        ):
            if size is None:
                break
            rows = X[:, features] if subsample_features else X
            # the tree's own apply: the forest validated the rows (float32, its features),
            # so the estimator's checks around it (fitted, feature count) have nothing to add
            leaves = tree.tree_.apply(rows)
            # scikit-learn's decision path length + average path length - 1.0 of each
            # leaf, added up per node at fit: the same operations on the same numbers
            depths += self._node_path_lengths[tree_idx][leaves]
            while size == tree_idx + 1:
                denominator = size * average_path_length_max_samples
                # a single training sample: denominator and depth are 0, the score 1 (as
                # scikit-learn)
                scores.append(
                    2
                    ** (
                        -np.divide(
                            depths, denominator, out=np.ones_like(depths), where=denominator != 0
                        )
                    )
                )
                size = next(wanted, None)
        return scores


class FastIForest(pyod_iforest.IForest):
    """PyOD's IForest with a SequentialIsolationForest as its detector."""

    def fit(self, X, y=None):
        """PyOD's IForest.fit, the training rows scored once (fit_decision_function)."""
        X = check_array(X)
        self._set_n_classes(y)
        self.detector_ = SequentialIsolationForest(
            n_estimators=self.n_estimators, **{name: getattr(self, name) for name in FOREST_PARAMS}
        )
        self.decision_scores_ = invert_order(self.detector_.fit_decision_function(X))
        self._process_decision_scores()
        return self

    def decision_function(self, X):
        """PyOD's IForest.decision_function, dense rows validated once: PyOD's check_array,
        then the forest's float32 conversion and feature count (checked_decision_function),
        and the order inverted as invert_order does it (times -1)."""
        check_is_fitted(self, ["decision_scores_", "threshold_", "labels_"])
        X = check_array(X)
        if issparse(X):
            return invert_order(self.detector_.decision_function(X))
        return self.detector_.checked_decision_function(X) * -1
