"""Deliberately broken launch-time methods (see online.py)."""

import numpy as np

from stragglers.launch.methods.base import LaunchMethod
from stragglers.methods.base import Param


class _Threshold(LaunchMethod):
    defaults = {"quantile": Param(0.8, float, gt=0, lt=1)}

    def fit(self, X, straggler, node, workload):
        self.cut = np.quantile(X[:, 0], self.params["quantile"])
        self.scale = 1.0 / float(np.std(X[:, 0]))

    def predict(self, X, node, workload):
        return X[:, 0] >= self.cut


class WrongLengthLaunch(_Threshold):
    name = "WrongLengthLaunch"

    def predict(self, X, node, workload):
        return np.zeros(len(X) + 1, dtype=bool)


class UnseededLaunch(_Threshold):
    name = "UnseededLaunch"

    def predict(self, X, node, workload):
        return np.random.default_rng().random(len(X)) < 0.5


class CrashesOnConstant(_Threshold):
    name = "CrashesOnConstant"

    def fit(self, X, straggler, node, workload):
        spread = float(np.ptp(X[:, 0]))
        self.cut = 1 / int(spread)  # ZeroDivisionError when every row is the same
