"""GBTR: the gradient-boosted latency regressor alone, trained on finished tasks (paper's
supervised baseline); a running task is flagged when its predicted latency reaches tau."""

from __future__ import annotations

from typing import ClassVar

from stragglers.methods.nurd import NURD


class GBTR(NURD):
    name: ClassVar[str] = "GBTR"
    family: ClassVar[str] = "Supervised"
    weighting: ClassVar[str] = "none"
    defaults: ClassVar[dict] = {
        k: v for k, v in NURD.defaults.items() if k not in ("alpha", "epsilon", "propensity_l2")
    }
