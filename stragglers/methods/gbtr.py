"""GBTR: the gradient-boosted latency regressor alone, trained on finished tasks (paper's
supervised baseline); a running task is flagged when its predicted latency reaches tau."""

from __future__ import annotations

from typing import Any, ClassVar

from stragglers.methods.base import NOT_TAKEN
from stragglers.methods.nurd import NURD


class GBTR(NURD):
    name: ClassVar[str] = "GBTR"
    family: ClassVar[str] = "Supervised"
    weighting: ClassVar[str] = "none"
    defaults: ClassVar[dict[str, Any]] = {
        "alpha": NOT_TAKEN,
        "epsilon": NOT_TAKEN,
        "propensity_l2": NOT_TAKEN,
    }
