"""NURD-NC: NURD without the calibration term, w = z (paper, Section 6)."""

from __future__ import annotations

from typing import ClassVar

from stragglers.methods.nurd import NURD


class NURDNoCalibration(NURD):
    name: ClassVar[str] = "NURD-NC"
    family: ClassVar[str] = "Ours"
    weighting: ClassVar[str] = "propensity"
    defaults: ClassVar[dict] = {
        k: v for k, v in NURD.defaults.items() if k not in ("alpha", "epsilon")
    }
