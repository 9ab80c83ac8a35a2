"""Multi-task SVMs: the feature augmentation equals the formulation it reduces (identities,
objective, optimality against an independent solver), unseen groups, the mixed-norm solver,
Wrangler's per-tuple SVMs, bad input."""

import numpy as np
import pytest
from scipy.optimize import minimize

from stragglers.launch.mtl import FORMULATIONS, Groups, MultiTaskSVM, PerTupleSVM, augment, hinge


def tiny_problem(n=30, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    node = rng.choice(["n1", "n2"], n)
    workload = rng.choice(["wa", "wb"], n)
    # node n2 and workload wb shift the boundary: the tuples differ
    score = (
        X @ np.array([1.0, -0.5, 0.3])
        + 0.8 * (node == "n2") * X[:, 1]
        - 0.6 * (workload == "wb") * X[:, 2]
    )
    y = score + 0.3 * rng.normal(size=n) > 0
    return X, y, node, workload


def random_group_weights(groups, rng):
    return {
        (p, k): rng.normal(size=groups.n_features)
        for p in groups.partitions
        for k in groups.keys[p]
    }


@pytest.mark.parametrize("name", ["f0nl", "f0t", "f0tl"])
def test_augmentation_identities(name):
    X, y, node, workload = tiny_problem()
    groups = Groups.learn(FORMULATIONS[name].partitions, node, workload, X.shape[1])
    rng = np.random.default_rng(1)
    weights = random_group_weights(groups, rng)
    lam, d = 1.0, X.shape[1]
    # w~_{p,g} = sqrt(lambda_{p,g} / lam) w_{p,g} (eq. 8), concatenated in block order (eq. 9)
    w_tilde = np.zeros(groups.n_groups * d)
    for p in groups.partitions:
        for g, key in enumerate(groups.keys[p]):
            block = groups.offsets[p] + g
            w_tilde[block * d : (block + 1) * d] = (
                np.sqrt(groups.lam_pg[p][g] / lam) * weights[(p, key)]
            )
    Z = augment(X, node, workload, groups, lam)
    expected = np.zeros(len(X))
    for p in groups.partitions:
        position = groups.lookup(p, node, workload)
        for i in range(len(X)):
            expected[i] += X[i] @ weights[(p, groups.keys[p][position[i]])]
    np.testing.assert_allclose(Z @ w_tilde, expected)  # eq. 12
    penalty = sum(
        groups.lam_pg[p][g] * weights[(p, k)] @ weights[(p, k)]
        for p in groups.partitions
        for g, k in enumerate(groups.keys[p])
    )
    assert lam * w_tilde @ w_tilde == pytest.approx(penalty)
    # lambda_{p,g} = #(p,g) / T: the base group holds every tuple
    if "base" in groups.partitions:
        assert groups.lam_pg["base"][0] == pytest.approx(1.0)


def solve_formulation_directly(X, y, node, workload, partitions, lam=1.0, scale=None):
    """Eq. 7 as a QP with slack variables, by SLSQP: w_{p,g}, b, xi. `scale`: a factor per
    partition on the unit coefficients #(p,g) / T (lam x lambda_p)."""
    groups = Groups.learn(partitions, node, workload, X.shape[1])
    d, n, G = X.shape[1], len(X), groups.n_groups
    membership = np.zeros((n, G))
    lam_flat = np.zeros(G)
    for p in partitions:
        position = groups.lookup(p, node, workload)
        membership[np.arange(n), groups.offsets[p] + position] = 1.0
        lam_flat[groups.offsets[p] : groups.offsets[p] + len(groups.keys[p])] = groups.lam_pg[p] * (
            1.0 if scale is None else scale[p]
        )
    ys = np.where(y, 1.0, -1.0)

    def split(z):
        return z[: G * d].reshape(G, d), z[G * d], z[G * d + 1 :]

    def objective(z):
        w, _, xi = split(z)
        return float((lam_flat * (w**2).sum(axis=1)).sum() + xi.sum())

    def margins(z):
        w, b, xi = split(z)
        score = np.einsum("ng,nd,gd->n", membership, X, w) + b
        return ys * score - 1.0 + xi

    z0 = np.zeros(G * d + 1 + n)
    z0[G * d + 1 :] = 1.0
    bounds = [(None, None)] * (G * d + 1) + [(0, None)] * n
    result = minimize(
        objective,
        z0,
        method="SLSQP",
        bounds=bounds,
        constraints=[{"type": "ineq", "fun": margins}],
        options={"maxiter": 1000, "ftol": 1e-10},
    )
    assert result.success, result.message
    return result.fun


@pytest.mark.parametrize("name", ["f0", "fn", "f0nl", "f0t", "f0tl"])
def test_augmented_svm_solves_the_formulation(name):
    X, y, node, workload = tiny_problem()
    model = MultiTaskSVM(name, lam=1.0, tol=1e-6, max_iter=20000).fit(X, y, node, workload)
    own = model.objective(X, y, node, workload)
    # (ii) the formulation's objective from the per-group weights = the augmented SVM's
    Z = augment(X, node, workload, model.groups_, 1.0)
    augmented = model.w_tilde_ @ model.w_tilde_ + hinge(
        np.where(y, 1.0, -1.0), Z @ model.w_tilde_ + model.intercept_
    )
    assert own == pytest.approx(augmented, rel=1e-9)
    # (iii) and it is the optimum an independent solver finds
    direct = solve_formulation_directly(X, y, node, workload, FORMULATIONS[name].partitions)
    assert own == pytest.approx(direct, rel=2e-3)
    assert own >= direct - 1e-6 * abs(direct)  # never below the true optimum
    np.testing.assert_array_equal(
        model.predict(X, node, workload), model.decision_function(X, node, workload) > 0
    )


def test_unseen_node_uses_the_other_partitions():
    X, y, node, workload = tiny_problem()
    model = MultiTaskSVM("f0nl").fit(X, y, node, workload)
    x = np.array([[0.3, -1.2, 0.7]])
    w = model.group_weights
    expected = x @ (w[("base", "all")] + w[("workload", "wb")]) + model.intercept_
    np.testing.assert_allclose(model.decision_function(x, ["new-node"], ["wb"]), expected)
    # an unseen tuple of known node and workload: w0 + w_n + w_l (f0t falls back on w0 only)
    f0t = MultiTaskSVM("f0t").fit(
        X[node != "n2"], y[node != "n2"], node[node != "n2"], workload[node != "n2"]
    )
    np.testing.assert_allclose(
        f0t.decision_function(x, ["n2"], ["wa"]),
        x @ f0t.group_weights[("base", "all")] + f0t.intercept_,
    )


def solve_mixed_directly(X, y, model):
    """The mixed-norm objective in its variational form (eq. 20-21), jointly convex in
    (w, eta, b, xi), by SLSQP; eta bounded away from 0."""
    Z = augment(X, model_node, model_workload, model.groups_, 1.0).toarray()
    columns = model.block_columns()
    n, D, M = len(X), Z.shape[1], len(columns)
    ys = np.where(y, 1.0, -1.0)

    def split(v):
        return v[:D], v[D], v[D + 1 : D + 1 + M], v[D + 1 + M :]

    def objective(v):
        w, _, eta, xi = split(v)
        return float(sum((w[c] ** 2).sum() / eta[m] for m, c in enumerate(columns)) + xi.sum())

    def gradient(v):
        # exact derivatives of the same objective (SLSQP would otherwise difference it
        # numerically, one evaluation per variable per step)
        w, _, eta, _ = split(v)
        grad = np.zeros_like(v)
        for m, c in enumerate(columns):
            grad[:D][c] += 2.0 * w[c] / eta[m]
            grad[D + 1 + m] = -(w[c] ** 2).sum() / eta[m] ** 2
        grad[D + 1 + M :] = 1.0
        return grad

    # margins: ys_i (z_i . w + b) - 1 + xi_i >= 0; simplex: 1 - sum(eta) >= 0 (both linear)
    margin_jacobian = np.hstack([ys[:, None] * Z, ys[:, None], np.zeros((n, M)), np.eye(n)])
    simplex_jacobian = np.concatenate([np.zeros(D + 1), -np.ones(M), np.zeros(n)])[None, :]
    v0 = np.concatenate([np.zeros(D), [0.0], np.full(M, 1.0 / M), np.ones(n)])
    bounds = [(None, None)] * (D + 1) + [(1e-6, 1.0)] * M + [(0, None)] * n
    constraints = [
        {
            "type": "ineq",
            "fun": lambda v: ys * (Z @ split(v)[0] + split(v)[1]) - 1.0 + split(v)[3],
            "jac": lambda v: margin_jacobian,
        },
        {
            "type": "ineq",
            "fun": lambda v: 1.0 - split(v)[2].sum(),
            "jac": lambda v: simplex_jacobian,
        },
    ]
    result = minimize(
        objective,
        v0,
        jac=gradient,
        method="SLSQP",
        bounds=bounds,
        constraints=constraints,
        options={"maxiter": 2000, "ftol": 1e-10},
    )
    assert result.success, result.message
    return result.fun


@pytest.mark.parametrize("name", ["fps", "fgs", "ffs1", "ffs2"])
def test_mixed_norm_solver_converges_to_the_optimum(name):
    global model_node, model_workload
    X, y, model_node, model_workload = tiny_problem(n=24)
    # block coordinate descent on (w, eta) converges slowly once a block heads to 0: the
    # default tolerance stops within 0.5% of the optimum here
    categories = ["cpu", "disk", "cpu"] if name.startswith("ffs") else None
    model = MultiTaskSVM(
        name, mixed_max_iter=100, tol=1e-6, max_iter=20000, feature_categories=categories
    )
    model.fit(X, y, model_node, model_workload)
    assert (
        len(model.eta_)
        == {"fps": 3, "fgs": model.groups_.n_groups, "ffs1": 2 * model.groups_.n_groups, "ffs2": 2}[
            name
        ]
    )
    path = np.array(model.objective_path_)
    assert model.converged_ and model.n_iter_ >= 2
    assert np.all(np.diff(path) <= 1e-6 * path[:-1])  # non-increasing (liblinear's tolerance)
    own = model.objective(X, y, model_node, model_workload)
    assert own == pytest.approx(path.min(), rel=1e-9)
    direct = solve_mixed_directly(X, y, model)
    assert direct - 1e-6 <= own <= direct * 1.005


def test_mixed_norm_keeps_the_best_iterate_when_an_inner_solve_ends_higher(monkeypatch):
    # liblinear can stop at its epoch cap above the previous alternation's objective: that
    # ends the alternation, and the model is the better, earlier iterate
    import stragglers.launch.mtl as mtl

    X, y, node, workload = tiny_problem(n=24)
    solve, calls = mtl._fit_linear_svm, []

    def worse_second_time(Z, *args):
        calls.append(1)
        w, b = solve(Z, *args)
        return (np.zeros_like(w), 0.0) if len(calls) == 2 else (w, b)

    monkeypatch.setattr(mtl, "_fit_linear_svm", worse_second_time)
    model = MultiTaskSVM("fgs", mixed_max_iter=10).fit(X, y, node, workload)
    path = model.objective_path_
    assert model.n_iter_ == 2 and path[1] > path[0]
    assert model.objective(X, y, node, workload) == pytest.approx(path[0], rel=1e-9)


def test_mixed_norm_selects_the_partition_the_labels_need():
    # every node has its own boundary and the workload means nothing: fps keeps the node
    # partition and shrinks the others (a shared w costs every partition the same under the
    # paper's lambda_{p,g} = #(p,g) / T, so only node-specific structure tells them apart)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, 3))
    node = rng.choice([f"n{k}" for k in range(6)], 400)
    workload = rng.choice(["wa", "wb", "wc"], 400)
    directions = {f"n{k}": rng.normal(size=3) for k in range(6)}
    y = np.einsum("nd,nd->n", X, np.array([directions[n] for n in node])) > 0
    model = MultiTaskSVM("fps", mixed_max_iter=100).fit(X, y, node, workload)
    eta = dict(zip(model.groups_.partitions, model.eta_))
    assert eta["node"] > 0.8 and eta["workload"] < 0.1 and eta["base"] < 0.1


def test_category_mixed_norm_keeps_the_category_the_labels_need():
    # the label is a function of the two "cpu" columns; "memory" and "disk" are noise: the
    # global category norm (ffs2) keeps cpu, and ffs1 shrinks noise blocks more often
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 5))
    node = rng.choice([f"n{k}" for k in range(4)], 400)
    workload = rng.choice(["wa", "wb"], 400)
    y = X[:, 0] - 0.8 * X[:, 1] > 0
    categories = ["cpu", "cpu", "memory", "disk", "disk"]
    ffs2 = MultiTaskSVM("ffs2", mixed_max_iter=100, feature_categories=categories).fit(
        X, y, node, workload
    )
    eta = dict(zip(ffs2.categories(), ffs2.eta_))
    assert eta["cpu"] > 0.9 and eta["memory"] < 0.05 and eta["disk"] < 0.05
    ffs1 = MultiTaskSVM("ffs1", mixed_max_iter=100, feature_categories=categories).fit(
        X, y, node, workload
    )
    eta = ffs1.eta_.reshape(ffs1.groups_.n_groups, -1)  # groups x (cpu, disk, memory)
    assert eta[:, 0].sum() > 0.9


def test_category_mixed_norm_needs_one_category_per_feature():
    X, y, node, workload = tiny_problem()
    with pytest.raises(ValueError, match="needs feature_categories"):
        MultiTaskSVM("ffs1")
    with pytest.raises(ValueError, match="2 entries for 3 features"):
        MultiTaskSVM("ffs2", feature_categories=["cpu", "disk"]).fit(X, y, node, workload)


def test_per_tuple_svm():
    X, y, node, workload = tiny_problem(n=120, seed=2)
    model = PerTupleSVM(min_rows=4).fit(X, y, node, workload)
    assert len(model.models_) == model.n_tuples_ - model.n_tuples_without_model_ == 4
    probability = model.predict_proba(X, node, workload)
    assert np.all((probability >= 0) & (probability <= 1))
    for key, (svm, _) in model.models_.items():
        rows = np.char.add(np.char.add(node.astype(str), "\x1f"), workload.astype(str)) == key
        decision = svm.decision_function(X[rows])
        order = np.argsort(decision)
        assert np.all(np.diff(probability[rows][order]) >= -1e-12)  # Platt: monotone
    unseen = model.predict(X[:3], ["other"] * 3, ["wa"] * 3)
    assert not unseen.any() and model.n_without_model_ == 3
    one_class = PerTupleSVM().fit(
        X[:40], np.r_[np.ones(39, bool), [False]], node[:40], workload[:40]
    )
    assert one_class.n_tuples_without_model_ >= 3


def test_bad_input_is_named():
    X, y, node, workload = tiny_problem()
    with pytest.raises(ValueError, match="unknown MTL formulation"):
        MultiTaskSVM("f9")
    with pytest.raises(ValueError, match="both classes"):
        MultiTaskSVM("f0").fit(X, np.ones(len(X), bool), node, workload)
    with pytest.raises(ValueError, match="NaN"):
        MultiTaskSVM("f0").fit(np.where(X > 1, np.nan, X), y, node, workload)
    with pytest.raises(ValueError, match="rows"):
        MultiTaskSVM("f0").fit(X, y, node[:-1], workload)


def test_launch_methods_describe_what_the_mixed_norms_kept():
    from stragglers.launch.methods import get_launch_method

    X, y, node, workload = tiny_problem(n=60)
    fps = get_launch_method("MTL-fps")({}, seed=1)
    fps.fit(X, y, node, workload)
    shares = fps.describe()
    assert set(shares) == {"eta_base", "eta_node", "eta_workload"}
    assert sum(shares.values()) == pytest.approx(1.0)
    fgs = get_launch_method("MTL-fgs")({}, seed=1)
    fgs.fit(X, y, node, workload)
    assert all(0 <= v <= 1 for v in fgs.describe().values())
    f0 = get_launch_method("MTL-f0")({}, seed=1)
    f0.fit(X, y, node, workload)
    assert f0.describe() == {}
    # the category norms read the categories of the protocol's launch columns
    ffs2 = get_launch_method("MTL-ffs2")({}, seed=1)
    ffs2.feature_names = [
        "launch_machine_cpu_requested",
        "launch_machine_running_tasks",
        "launch_machine_disk_io_time_sum",
    ]
    ffs2.fit(X, y, node, workload)
    assert set(ffs2.describe()) == {"eta_cpu", "eta_disk", "eta_system"}
    ffs1 = get_launch_method("MTL-ffs1")({}, seed=1)
    ffs1.feature_names = ffs2.feature_names
    ffs1.fit(X, y, node, workload)
    assert set(ffs1.describe()) == {"shrunk_share_cpu", "shrunk_share_disk", "shrunk_share_system"}
    ffs1.feature_names = ["launch_machine_mystery", *ffs2.feature_names[1:]]
    with pytest.raises(ValueError, match="launch_machine_mystery"):
        ffs1.fit(X, y, node, workload)


# ---- lam and lambda_p are real parameters ------------------------------------------------


def test_lam_and_lambda_p_scale_the_formulation_they_solve():
    """lambda_{p,g} = lam x lambda_p x #(p,g) / T: the fitted objective equals an independent
    solve of eq. 7 with those coefficients computed by hand from the unit ones (#(p,g) / T)."""
    X, y, node, workload = tiny_problem()
    partitions = FORMULATIONS["f0nl"].partitions
    lam, lam_p = 0.5, {"base": 2.0, "node": 0.25, "workload": 4.0}
    model = MultiTaskSVM("f0nl", lam=lam, lam_p=lam_p, tol=1e-6, max_iter=50000)
    model.fit(X, y, node, workload)
    unit = Groups.learn(partitions, node, workload, X.shape[1])  # #(p,g) / T
    for p in partitions:
        np.testing.assert_allclose(model.groups_.lam_pg[p], lam * lam_p[p] * unit.lam_pg[p])
    direct = solve_formulation_directly(
        X, y, node, workload, partitions, scale={p: lam * lam_p[p] for p in partitions}
    )
    assert model.objective(X, y, node, workload) == pytest.approx(direct, rel=2e-3)


def test_lam_changes_decisions():
    from stragglers.launch.methods import get_launch_method

    X, y, node, workload = tiny_problem(n=60, seed=3)
    cls = get_launch_method("MTL-f0nl")

    def decisions(**params):
        method = cls(params, seed=0)
        method.feature_names = ["a", "b", "c"]
        method.fit(X, y, node, workload)
        return method.model.decision_function(X, node, workload), method.predict(X, node, workload)

    base_score, base = decisions()
    # a strong penalty shrinks every weight: the scores move towards the intercept and some
    # tasks change side
    strong_score, strong = decisions(lam=100.0)
    assert (
        np.abs(strong_score - strong_score.mean()).mean()
        < 0.5 * np.abs(base_score - base_score.mean()).mean()
    )
    assert (strong != base).any()
    # lambda_p of one partition: a heavy penalty on the node weights removes the node-specific
    # boundary (node n2 shifts it in tiny_problem), other partitions untouched
    _, no_node = decisions(lam_node=1e4)
    assert (no_node != base).any()
    method = cls({"lam_node": 1e4}, seed=0)
    method.feature_names = ["a", "b", "c"]
    method.fit(X, y, node, workload)
    node_norm = max(
        np.linalg.norm(w) for (p, _), w in method.model.group_weights.items() if p == "node"
    )
    base_norm = np.linalg.norm(method.model.group_weights[("base", "all")])
    assert node_norm < 1e-2 * base_norm


def test_held_out_platt_uses_out_of_fold_decisions():
    """platt: held_out fits the sigmoid on decisions of rows the fold's SVM did not train on,
    grouping copies of a row (oversampling) in one fold: checked against folds rebuilt by
    hand."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedGroupKFold
    from sklearn.svm import LinearSVC

    X, y, node, workload = tiny_problem(n=80, seed=5)
    node[:], workload[:] = "n1", "wa"  # one tuple
    X, y = np.vstack([X, X[y][:5]]), np.r_[y, y[y][:5]]  # copies of 5 stragglers
    node, workload = np.full(len(y), "n1"), np.full(len(y), "wa")
    model = PerTupleSVM(platt="held_out", seed=3).fit(X, y, node, workload)
    assert model.n_platt_in_sample_ == 0
    _, group = np.unique(np.column_stack([X, y]), axis=0, return_inverse=True)
    group = np.asarray(group).ravel()
    assert len(np.unique(group)) == len(y) - 5
    decision = np.empty(len(y))
    for train, test in StratifiedGroupKFold(3, shuffle=True, random_state=3).split(X, y, group):
        assert not set(group[train]) & set(group[test])  # no copy on both sides
        svm = LinearSVC(C=1.0, loss="hinge", dual=True, random_state=3, max_iter=20000).fit(
            X[train], y[train]
        )
        decision[test] = svm.decision_function(X[test])
    expected = LogisticRegression(C=1e6).fit(decision.reshape(-1, 1), y)
    _, platt = model.models_["n1\x1fwa"]
    np.testing.assert_allclose(platt.coef_, expected.coef_, rtol=1e-6)
    with pytest.raises(ValueError, match="platt"):
        PerTupleSVM(platt="cv")
