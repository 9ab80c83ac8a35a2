"""The MTL paper's formulations (§5.2, Table 4) as launch-time methods, one class each:
lambda_p = 1 for every partition as the paper sets (lam_base, lam_node, lam_workload,
lam_tuple: its lambda_0, nu, omega, tau, swept in its Appendix A), `lam` multiplying them all;
see stragglers/launch/mtl.py."""

from stragglers.formats.datasets import machine_feature_category
from stragglers.launch.methods.base import LaunchMethod
from stragglers.launch.mtl import MultiTaskSVM
from stragglers.methods.base import Param


class _MultiTask(LaunchMethod):
    family = "Launch-time (MTL)"
    formulation = ""
    defaults = {
        "lam": Param(
            1.0,
            float,
            gt=0,
            doc="overall regularisation strength, multiplying every partition's lambda_p",
        ),  # multiplies every lambda_p (the overall regularisation strength)
        "lam_base": Param(
            1.0, float, gt=0, doc="lambda_0: the base (global) partition's weight"
        ),  # lambda_0: the base (global) partition's lambda_p
        "lam_node": Param(
            1.0, float, gt=0, doc="nu: the node partition's weight"
        ),  # nu: the node partition's
        "lam_workload": Param(
            1.0, float, gt=0, doc="omega: the workload partition's weight"
        ),  # omega: the workload partition's
        "lam_tuple": Param(
            1.0, float, gt=0, doc="tau: the {node, workload} tuple partition's weight"
        ),  # tau: the {node, workload} tuple partition's
    }

    def fit(self, X, straggler, node, workload):
        categories = None
        if self.formulation in ("ffs1", "ffs2"):
            categories = [machine_feature_category(name) for name in self.feature_names]
        lam_p = {p: float(self.params[f"lam_{p}"]) for p in ("base", "node", "workload", "tuple")}
        self.model = MultiTaskSVM(
            self.formulation,
            lam=self.params["lam"],
            seed=self.seed,
            feature_categories=categories,
            lam_p=lam_p,
        )
        self.model.fit(X, straggler, node, workload)

    def predict(self, X, node, workload):
        return self.model.predict(X, node, workload)

    def describe(self):
        """Mixed norms: the weight (eta) each partition kept (fps) or each feature category
        (ffs2), the share of each partition's groups whose block shrank below 1e-3 of the
        largest (fgs), or of each category's (group, category) blocks (ffs1)."""
        model = self.model
        if model.formulation.regulariser == "l2":
            return {}
        partitions = model.groups_.partitions
        if model.formulation.regulariser == "partition_sparse":
            return {f"eta_{p}": float(eta) for p, eta in zip(partitions, model.eta_)}
        if model.formulation.regulariser == "category_global":
            return {f"eta_{c}": float(eta) for c, eta in zip(model.categories(), model.eta_)}
        if model.formulation.regulariser == "category_per_group":
            small = (model.eta_ < 1e-3 * model.eta_.max()).reshape(model.groups_.n_groups, -1)
            return {
                f"shrunk_share_{c}": float(small[:, k].mean())
                for k, c in enumerate(model.categories())
            }
        block = model.block_of_group()
        small = model.eta_[block] < 1e-3 * model.eta_.max()
        out = {}
        for p in partitions:
            start = model.groups_.offsets[p]
            out[f"shrunk_share_{p}"] = float(
                small[start : start + len(model.groups_.keys[p])].mean()
            )
        return out


class MTLf0(_MultiTask):
    name = "MTL-f0"
    formulation = "f0"


class MTLfn(_MultiTask):
    name = "MTL-fn"
    formulation = "fn"


class MTLfl(_MultiTask):
    name = "MTL-fl"
    formulation = "fl"


class MTLf0nl(_MultiTask):
    name = "MTL-f0nl"
    formulation = "f0nl"


class MTLf0t(_MultiTask):
    name = "MTL-f0t"
    formulation = "f0t"


class MTLf0tl(_MultiTask):
    name = "MTL-f0tl"
    formulation = "f0tl"


class MTLfps(_MultiTask):
    name = "MTL-fps"
    formulation = "fps"


class MTLfgs(_MultiTask):
    name = "MTL-fgs"
    formulation = "fgs"


class MTLffs1(_MultiTask):
    name = "MTL-ffs1"
    formulation = "ffs1"


class MTLffs2(_MultiTask):
    name = "MTL-ffs2"
    formulation = "ffs2"
