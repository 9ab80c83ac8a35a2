"""Multi-task linear SVMs for straggler avoidance (Yadwadkar et al., "Multi-Task Learning for
Straggler Avoiding Predictive Job Scheduling", JMLR 2016) and Wrangler's per-{node, workload}
SVMs (Wrangler, SoCC 2014, §3).

A learning-task is one {node, workload} tuple; its weights are the sum of its groups' (base,
node, workload, tuple: the MTL paper's eq. 6). The l2 formulations (§4.1) are reduced to one
standard SVM (§4.2, solved by liblinear), the mixed-norm ones (§4.3) are solved by the
alternation of their variational form (eq. 20). docs/methods.md ("Launch-time, cross-job
protocol": regularisation and solver) gives the formulations; docs/deviations.md what differs.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # annotations only: the library is imported where it is used
    import scipy.sparse as sp
    from sklearn.svm import LinearSVC

PARTITIONS = ("base", "node", "workload", "tuple")
INTERCEPT_SCALING = 10.0  # larger values slow liblinear down badly (measured on the tests' problem)


@dataclass(frozen=True)
class Formulation:
    name: str
    partitions: tuple[str, ...]
    regulariser: str  # "l2", "partition_sparse" (fps) or "group_sparse" (fgs)


# §5.2 (Table 4): which partitions each formulation uses; fps / fgs use global, node and
# workload partitions ("we only consider the global, node-based and workload-based")
FORMULATIONS = {
    "f0": Formulation("f0", ("base",), "l2"),
    "fn": Formulation("fn", ("node",), "l2"),
    "fl": Formulation("fl", ("workload",), "l2"),
    "f0nl": Formulation("f0nl", ("base", "node", "workload"), "l2"),
    "f0t": Formulation("f0t", ("base", "tuple"), "l2"),
    "f0tl": Formulation("f0tl", ("base", "workload", "tuple"), "l2"),
    "fps": Formulation("fps", ("base", "node", "workload"), "partition_sparse"),
    "fgs": Formulation("fgs", ("base", "node", "workload"), "group_sparse"),
    # §5.2 evaluates f_fs1 / f_fs2 on the same partitions as fps / fgs
    "ffs1": Formulation("ffs1", ("base", "node", "workload"), "category_per_group"),
    "ffs2": Formulation("ffs2", ("base", "node", "workload"), "category_global"),
}
CATEGORY_REGULARISERS = ("category_per_group", "category_global")


def formulation(name: str) -> Formulation:
    if name not in FORMULATIONS:
        raise ValueError(f"unknown MTL formulation {name!r}; known: {sorted(FORMULATIONS)}")
    return FORMULATIONS[name]


def _check_inputs(X, node, workload, y=None) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError("X has NaN or infinite values (standardise and fill them first)")
    for name, values in (("node", node), ("workload", workload)) + (
        (("y", y),) if y is not None else ()
    ):
        if len(values) != len(X):
            raise ValueError(f"{name} has {len(values)} rows, X has {len(X)}")
    if y is not None:
        labels = np.asarray(y, dtype=bool)
        if labels.all() or not labels.any():
            raise ValueError("y needs both classes (stragglers and non-stragglers) to train on")
    return X


def group_keys(partition: str, node, workload) -> np.ndarray:
    """The group of every row under a partition, as text."""
    node = np.asarray(node).astype(str)
    workload = np.asarray(workload).astype(str)
    if partition == "base":
        return np.full(len(node), "all", dtype=object)
    if partition == "node":
        return node.astype(object)
    if partition == "workload":
        return workload.astype(object)
    if partition == "tuple":
        return np.char.add(np.char.add(node, "\x1f"), workload).astype(object)
    raise ValueError(f"unknown partition {partition!r}; known: {PARTITIONS}")


@dataclass
class Groups:
    """The groups seen in training: per partition, sorted keys, #(p,g) and lambda_{p,g}."""

    partitions: tuple[str, ...]
    keys: dict[str, np.ndarray]
    lam_pg: dict[str, np.ndarray]
    offsets: dict[str, int]  # first group index of each partition in the block order
    n_features: int

    @property
    def n_groups(self) -> int:
        return sum(len(k) for k in self.keys.values())

    @classmethod
    def learn(
        cls, partitions, node, workload, n_features: int, lam_p: float | dict[str, float] = 1.0
    ) -> Groups:
        """`lam_p`: lambda_p, one number for every partition or one per partition name."""
        tuples = group_keys("tuple", node, workload)
        unique_tuples, first = np.unique(tuples, return_index=True)
        T = len(unique_tuples)
        keys, lam_pg, offsets, start = {}, {}, {}, 0
        for partition in partitions:
            labels = group_keys(partition, node, workload)
            # #(p,g): the number of learning-tasks (tuples) in the group
            groups_of_tuples = labels[first]
            names, counts = np.unique(groups_of_tuples, return_counts=True)
            keys[partition] = names
            weight = lam_p[partition] if isinstance(lam_p, dict) else lam_p
            lam_pg[partition] = float(weight) * counts / T
            offsets[partition] = start
            start += len(names)
        return cls(tuple(partitions), keys, lam_pg, offsets, int(n_features))

    def lookup(self, partition: str, node, workload) -> np.ndarray:
        """Group position within the partition, -1 where unseen."""
        labels = group_keys(partition, node, workload)
        known = self.keys[partition]
        position = np.searchsorted(known, labels)
        position = np.minimum(position, len(known) - 1)
        return np.where(known[position] == labels, position, -1)


def augment(
    X, node, workload, groups: Groups, lam: float = 1.0, block_scale: np.ndarray | None = None
) -> sp.csr_matrix:
    """phi(x) (eqs. 10-11): for each partition, x * sqrt(lam / lambda_{p,g}) in the block of
    the row's group (nothing if the group is unseen). `block_scale` (one per group, in block
    order) multiplies each block further (the mixed-norm solver's sqrt(eta))."""
    import scipy.sparse as sp

    X = np.asarray(X, dtype=float)
    n, d = X.shape
    rows, cols, vals = [], [], []
    for partition in groups.partitions:
        position = groups.lookup(partition, node, workload)
        seen = np.flatnonzero(position >= 0)
        group = position[seen]
        scale = np.sqrt(lam / groups.lam_pg[partition][group])
        block = groups.offsets[partition] + group
        if block_scale is not None:
            scale = scale * block_scale[block]
        rows.append(np.repeat(seen, d))
        cols.append((block[:, None] * d + np.arange(d)[None, :]).ravel())
        vals.append((X[seen] * scale[:, None]).ravel())
    matrix = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(n, groups.n_groups * d),
    )
    matrix.eliminate_zeros()
    return matrix


def hinge(y_signed: np.ndarray, score: np.ndarray) -> float:
    return float(np.maximum(0.0, 1.0 - y_signed * score).sum())


def _fit_linear_svm(
    Z: sp.csr_matrix, y_signed: np.ndarray, lam: float, seed: int, max_iter: int, tol: float
) -> tuple[np.ndarray, float]:
    """min lam ||w||^2 + sum hinge  ==  liblinear's 1/2 ||w||^2 + C sum hinge, C = 1 / (2 lam)."""
    from sklearn.svm import LinearSVC

    svm = LinearSVC(
        C=1.0 / (2.0 * lam),
        loss="hinge",
        dual=True,
        fit_intercept=True,
        intercept_scaling=INTERCEPT_SCALING,
        random_state=seed,
        max_iter=max_iter,
        tol=tol,
    )
    _fit_quietly(svm, Z, y_signed)
    return svm.coef_.ravel().copy(), float(svm.intercept_[0])


def _fit_quietly(svm: LinearSVC, X, y) -> None:
    """liblinear's convergence warnings silenced: the objective (MTL) or the model's
    predictions (per tuple) are what the tests and tables check."""
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svm.fit(X, y)


def rows_by_key(keys: np.ndarray):
    """(key, row positions) for each distinct key, keys in sorted order."""
    unique, inverse = np.unique(keys, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(unique) + 1))
    for k, key in enumerate(unique):
        yield key, order[bounds[k] : bounds[k + 1]]


class MultiTaskSVM:
    """One MTL formulation (see the module docstring); y True = straggler."""

    def __init__(
        self,
        formulation: str,
        lam: float = 1.0,
        seed: int = 0,
        max_iter: int = 2000,
        tol: float = 1e-4,
        mixed_max_iter: int = 30,
        mixed_tol: float = 1e-4,
        feature_categories=None,
        lam_p: dict[str, float] | None = None,
    ):
        """`max_iter`, `tol`: liblinear's (scikit-learn's defaults: the tests solve to 1e-6);
        `mixed_max_iter`, `mixed_tol`: alternations of the mixed-norm solver and the relative
        decrease of the objective under which it stops (bench/mixed_norm_solver.py measures
        the objective against liblinear's epochs); `feature_categories`: one category name per feature column (ffs1 / ffs2 only);
        `lam`: multiplies every lambda_p; `lam_p`: lambda_p per partition (base, node,
        workload, tuple: the paper's lambda_0, nu, omega, tau), 1 where not given."""
        self.formulation = globals()["formulation"](formulation)
        if not lam > 0:
            raise ValueError(f"lam must be > 0, got {lam}")
        unknown = sorted(set(lam_p or {}) - set(PARTITIONS))
        if unknown:
            raise ValueError(f"lam_p: unknown partition(s) {unknown}; known: {PARTITIONS}")
        self.lam_p = {p: 1.0 for p in PARTITIONS} | {p: float(v) for p, v in (lam_p or {}).items()}
        if not all(v > 0 for v in self.lam_p.values()):
            raise ValueError(f"lam_p must be > 0 for every partition, got {self.lam_p}")
        self.feature_categories = (
            None if feature_categories is None else np.asarray(feature_categories, dtype=str)
        )
        if (
            self.formulation.regulariser in CATEGORY_REGULARISERS
            and self.feature_categories is None
        ):
            raise ValueError(
                f"formulation {formulation!r} needs feature_categories (one per feature)"
            )
        self.lam, self.seed, self.max_iter, self.tol = (
            float(lam),
            int(seed),
            int(max_iter),
            float(tol),
        )
        self.mixed_max_iter, self.mixed_tol = int(mixed_max_iter), float(mixed_tol)

    # -- fitting ------------------------------------------------------------------------------
    def fit(self, X, y, node, workload) -> MultiTaskSVM:
        X = _check_inputs(X, node, workload, y)
        if self.feature_categories is not None and len(self.feature_categories) != X.shape[1]:
            raise ValueError(
                f"feature_categories has {len(self.feature_categories)} entries for {X.shape[1]} features"
            )
        y_signed = np.where(np.asarray(y, dtype=bool), 1.0, -1.0)
        self.groups_ = Groups.learn(
            self.formulation.partitions,
            node,
            workload,
            X.shape[1],
            {p: self.lam * self.lam_p[p] for p in PARTITIONS},
        )
        if self.formulation.regulariser == "l2":
            Z = augment(X, node, workload, self.groups_, self.lam)
            self.w_tilde_, self.intercept_ = _fit_linear_svm(
                Z, y_signed, self.lam, self.seed, self.max_iter, self.tol
            )
            self.n_iter_, self.converged_, self.objective_path_ = 1, True, []
        else:
            self._fit_mixed(X, y_signed, node, workload)
        self.group_weights = self._group_weights()
        return self

    def block_of_group(self) -> np.ndarray:
        """fps / fgs: the mixed-norm block of every group (block order): its partition's
        (fps) or its own (fgs)."""
        groups = self.groups_
        if self.formulation.regulariser == "partition_sparse":
            return np.concatenate(
                [np.full(len(groups.keys[p]), k) for k, p in enumerate(groups.partitions)]
            )
        return np.arange(groups.n_groups)

    def categories(self) -> np.ndarray:
        """The feature categories present, sorted (the category blocks' order)."""
        return np.unique(self.feature_categories)

    def block_of_column(self) -> np.ndarray:
        """The mixed-norm block of every entry of w~ (group-major, d entries per group)."""
        n_groups, d = self.groups_.n_groups, self.groups_.n_features
        regulariser = self.formulation.regulariser
        if regulariser in CATEGORY_REGULARISERS:
            category = np.searchsorted(self.categories(), self.feature_categories)
            if regulariser == "category_global":
                return np.tile(category, n_groups)
            return (
                np.arange(n_groups)[:, None] * len(self.categories()) + category[None, :]
            ).ravel()
        return np.repeat(self.block_of_group(), d)

    def block_columns(self) -> list[np.ndarray]:
        """Entries of w~ in each mixed-norm block."""
        block = self.block_of_column()
        return [np.flatnonzero(block == b) for b in range(block.max() + 1)]

    def _block_norms(self, w_tilde: np.ndarray) -> np.ndarray:
        block = self.block_of_column()
        return np.sqrt(np.bincount(block, weights=w_tilde**2, minlength=int(block.max()) + 1))

    def _fit_mixed(self, X, y_signed, node, workload) -> None:
        import scipy.sparse as sp

        block = self.block_of_column()
        n_blocks = int(block.max()) + 1
        eta = np.full(n_blocks, 1.0 / n_blocks)
        path = []
        base = augment(X, node, workload, self.groups_, self.lam)
        self.converged_ = False
        best = np.inf
        for iteration in range(1, self.mixed_max_iter + 1):
            column_scale = np.sqrt(eta)[block]
            Z = base @ sp.diags(column_scale)
            u, b0 = _fit_linear_svm(Z, y_signed, self.lam, self.seed, self.max_iter, self.tol)
            w_tilde = u * column_scale  # back to w~ (w_m = sqrt(eta_m) u_m)
            norms = self._block_norms(w_tilde)
            objective = self.lam * norms.sum() ** 2 + hinge(y_signed, base @ w_tilde + b0)
            path.append(objective)
            # liblinear may stop at its epoch cap, so an alternation can end above the one
            # before: the model is the best iterate, and no decrease (or one below mixed_tol)
            # ends the alternation
            if objective < best:
                best = objective
                self.w_tilde_, self.intercept_ = w_tilde, b0
                self.eta_ = norms / norms.sum() if norms.sum() > 0 else eta
            if norms.sum() == 0:
                self.converged_ = True
                break
            eta = norms / norms.sum()
            if iteration > 1 and path[-2] - objective <= self.mixed_tol * max(abs(path[-2]), 1e-12):
                self.converged_ = True
                break
        self.n_iter_, self.objective_path_ = iteration, path

    def _group_weights(self) -> dict[tuple[str, str], np.ndarray]:
        """w_{p,g} = w~_{p,g} * sqrt(lam / lambda_{p,g}) (eq. 8 inverted)."""
        groups, d = self.groups_, self.groups_.n_features
        out = {}
        for partition in groups.partitions:
            for position, key in enumerate(groups.keys[partition]):
                block = groups.offsets[partition] + position
                scale = np.sqrt(self.lam / groups.lam_pg[partition][position])
                out[(partition, str(key))] = self.w_tilde_[block * d : (block + 1) * d] * scale
        return out

    # -- prediction ---------------------------------------------------------------------------
    def decision_function(self, X, node, workload) -> np.ndarray:
        X = _check_inputs(X, node, workload)
        return augment(X, node, workload, self.groups_, self.lam) @ self.w_tilde_ + self.intercept_

    def predict(self, X, node, workload) -> np.ndarray:
        return self.decision_function(X, node, workload) > 0

    def objective(self, X, y, node, workload) -> float:
        """The formulation's own objective at the fitted w_{p,g}, b, computed from the
        per-group weights (eq. 7, or the mixed norm of eqs. 15-16 on w~)."""
        X = _check_inputs(X, node, workload, y)
        y_signed = np.where(np.asarray(y, dtype=bool), 1.0, -1.0)
        groups = self.groups_
        score = np.full(len(X), self.intercept_)
        penalty_terms = []
        for partition in groups.partitions:
            position = groups.lookup(partition, node, workload)
            for g, key in enumerate(groups.keys[partition]):
                w = self.group_weights[(partition, str(key))]
                rows = position == g
                score[rows] += X[rows] @ w
                penalty_terms.append((partition, g, groups.lam_pg[partition][g] * float(w @ w)))
        if self.formulation.regulariser == "l2":
            penalty = sum(term for _, _, term in penalty_terms)
        else:
            # w~_{p,g} = sqrt(lambda_{p,g} / lam) w_{p,g} (eq. 8), then the blocks' norms
            w_tilde = np.concatenate(
                [
                    self.group_weights[(partition, str(key))]
                    * np.sqrt(groups.lam_pg[partition][g] / self.lam)
                    for partition in groups.partitions
                    for g, key in enumerate(groups.keys[partition])
                ]
            )
            penalty = self.lam * float(self._block_norms(w_tilde).sum()) ** 2
        return float(penalty + hinge(y_signed, score))


PLATT_FITS = ("training", "held_out")


class PerTupleSVM:
    """Wrangler (§3.2-3.4): one linear SVM per {node, workload} tuple, its decision values
    turned into a confidence by Platt scaling (a logistic fit on decision values; Platt 1999,
    as Wrangler). `platt`: "training" fits the sigmoid on the SVM's own training decisions
    (in-sample, over-confident); "held_out" on out-of-fold decisions as Platt recommends
    (stratified folds over the tuple's *distinct* rows, so copies of an oversampled row stay
    in one fold; up to 3 folds; a tuple with fewer than 2 distinct rows of a class falls back
    to its training decisions, counted in `n_platt_in_sample_`). A tuple with fewer than
    `min_rows` rows or one class has no model; a task of a tuple without a model is not
    predicted to straggle (Wrangler schedules it as usual); `n_without_model_` counts them at
    the last prediction."""

    def __init__(
        self,
        C: float = 1.0,
        confidence: float = 0.5,
        min_rows: int = 4,
        seed: int = 0,
        max_iter: int = 20000,
        platt: str = "training",
    ):
        if platt not in PLATT_FITS:
            raise ValueError(f"platt must be one of {PLATT_FITS}, got {platt!r}")
        self.C, self.confidence, self.min_rows = float(C), float(confidence), int(min_rows)
        self.seed, self.max_iter, self.platt = int(seed), int(max_iter), platt

    def fit(self, X, y, node, workload) -> PerTupleSVM:
        from sklearn.linear_model import LogisticRegression
        from sklearn.svm import LinearSVC

        X = _check_inputs(X, node, workload, y)
        y = np.asarray(y, dtype=bool)
        self.models_ = {}
        self.n_tuples_, self.n_tuples_without_model_, self.n_platt_in_sample_ = 0, 0, 0
        for key, rows in rows_by_key(group_keys("tuple", node, workload)):
            self.n_tuples_ += 1
            labels = y[rows]
            if len(rows) < self.min_rows or labels.all() or not labels.any():
                self.n_tuples_without_model_ += 1
                continue
            svm = LinearSVC(
                C=self.C, loss="hinge", dual=True, random_state=self.seed, max_iter=self.max_iter
            )
            _fit_quietly(svm, X[rows], labels)
            decision = (
                self._held_out_decisions(X[rows], labels) if self.platt == "held_out" else None
            )
            if decision is None:
                self.n_platt_in_sample_ += self.platt == "held_out"
                decision = svm.decision_function(X[rows])
            platt = LogisticRegression(C=1e6).fit(decision.reshape(-1, 1), labels)
            self.models_[key] = (svm, platt)
        return self

    def _held_out_decisions(self, X: np.ndarray, labels: np.ndarray) -> np.ndarray | None:
        """Out-of-fold SVM decisions over folds of distinct rows; None when a class has fewer
        than 2 distinct rows (or a training fold would hold one class)."""
        from sklearn.model_selection import StratifiedGroupKFold
        from sklearn.svm import LinearSVC

        _, group = np.unique(np.column_stack([X, labels]), axis=0, return_inverse=True)
        group = np.asarray(group).ravel()
        distinct = [len(np.unique(group[labels == c])) for c in (True, False)]
        n_splits = min(3, *distinct)
        if n_splits < 2:
            return None
        out = np.empty(len(labels))
        folds = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=self.seed)
        for train, test in folds.split(X, labels, group):
            if labels[train].all() or not labels[train].any():
                return None
            svm = LinearSVC(
                C=self.C, loss="hinge", dual=True, random_state=self.seed, max_iter=self.max_iter
            )
            _fit_quietly(svm, X[train], labels[train])
            out[test] = svm.decision_function(X[test])
        return out

    def predict_proba(self, X, node, workload) -> np.ndarray:
        """Platt confidence that each task straggles; NaN where its tuple has no model."""
        X = _check_inputs(X, node, workload)
        out = np.full(len(X), np.nan)
        for key, rows in rows_by_key(group_keys("tuple", node, workload)):
            if key in self.models_:
                svm, platt = self.models_[key]
                out[rows] = platt.predict_proba(svm.decision_function(X[rows]).reshape(-1, 1))[:, 1]
        self.n_without_model_ = int(np.isnan(out).sum())
        return out

    def predict(self, X, node, workload) -> np.ndarray:
        probability = self.predict_proba(X, node, workload)
        return np.nan_to_num(probability, nan=0.0) >= self.confidence
