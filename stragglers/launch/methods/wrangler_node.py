"""Wrangler-node: Wrangler's own model (Yadwadkar et al., 2014; MTL paper §3): one linear
SVM per {node, workload} tuple on the node's counters at launch, Platt-scaled confidence;
a tuple without enough data (or one class) predicts nothing."""

from stragglers.launch.methods.base import LaunchMethod
from stragglers.launch.mtl import PerTupleSVM
from stragglers.methods.base import Param


class WranglerNode(LaunchMethod):
    name = "Wrangler-node"
    family = "Launch-time (Wrangler)"
    # platt: "training" fits Platt scaling on the SVM's training decisions (kept default);
    # "held_out": on out-of-fold decisions over distinct rows, as Platt (1999) recommends
    defaults = {
        "C": Param(
            1.0, float, gt=0, doc="inverse regularisation strength of each tuple's linear SVM"
        ),
        "confidence": Param(
            0.5,
            float,
            ge=0,
            le=1,
            doc="Platt-scaled probability at or above which a task is predicted to straggle",
        ),
        "min_rows": Param(
            4, int, ge=1, doc="fewest training rows (of both classes) a tuple needs for its own SVM"
        ),
        "platt": Param(
            "training",
            str,
            choices=("training", "held_out"),
            doc="where the Platt sigmoid is fit: the SVM's training decisions, or held-out ones",
        ),
    }

    def fit(self, X, straggler, node, workload):
        self.model = PerTupleSVM(
            C=self.params["C"],
            confidence=self.params["confidence"],
            min_rows=self.params["min_rows"],
            seed=self.seed,
            platt=self.params["platt"],
        ).fit(X, straggler, node, workload)

    def predict(self, X, node, workload):
        return self.model.predict(X, node, workload)
