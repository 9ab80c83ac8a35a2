"""Evaluate: per-task flags against the job's straggler threshold.

`metrics` scores predictions (TPR, FPR, F1 per job, F1 over time, cost); `timing` says how
early the flags came (early-F1, lead). The flat names below are `metrics`'.
"""

from stragglers import flat_api

# the flat API: every public name of these modules, loaded on first use
__getattr__ = flat_api(__name__, ("metrics",))
