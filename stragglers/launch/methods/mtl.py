"""The MTL paper's formulations (§5.2, Table 4) as launch-time methods, one class each:
lambda = 1 for every partition as the paper sets; see stragglers/launch/mtl.py."""

from stragglers.launch.methods.base import LaunchMethod
from stragglers.launch.mtl import MultiTaskSVM


class _MultiTask(LaunchMethod):
    family = "Launch-time (MTL)"
    formulation = ""
    defaults = {"lam": 1.0}

    def fit(self, X, straggler, node, workload):
        self.model = MultiTaskSVM(self.formulation, lam=self.params["lam"], seed=self.seed)
        self.model.fit(X, straggler, node, workload)

    def predict(self, X, node, workload):
        return self.model.predict(X, node, workload)


class MTLf0(_MultiTask):
    name, formulation = "MTL-f0", "f0"


class MTLfn(_MultiTask):
    name, formulation = "MTL-fn", "fn"


class MTLfl(_MultiTask):
    name, formulation = "MTL-fl", "fl"


class MTLf0nl(_MultiTask):
    name, formulation = "MTL-f0nl", "f0nl"


class MTLf0t(_MultiTask):
    name, formulation = "MTL-f0t", "f0t"


class MTLf0tl(_MultiTask):
    name, formulation = "MTL-f0tl", "f0tl"


class MTLfps(_MultiTask):
    name, formulation = "MTL-fps", "fps"


class MTLfgs(_MultiTask):
    name, formulation = "MTL-fgs", "fgs"
