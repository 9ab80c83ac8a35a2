"""NURD-NC: NURD without the calibration term, w = z (paper, Section 6)."""

from __future__ import annotations

from typing import Any, ClassVar

from stragglers.methods.base import NOT_TAKEN
from stragglers.methods.nurd import NURD


class NURDNoCalibration(NURD):
    name: ClassVar[str] = "NURD-NC"
    family: ClassVar[str] = "Ours"
    weighting: ClassVar[str] = "propensity"
    defaults: ClassVar[dict[str, Any]] = {
        "alpha": NOT_TAKEN,
        "epsilon": NOT_TAKEN,
    }
