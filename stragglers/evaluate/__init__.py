"""Evaluate: per-task flags against the job's straggler threshold.

`metrics` scores predictions (TPR, FPR, F1 per job, F1 over time, cost); `timing` says how
early the flags came (early-F1, lead); `bootstrap` the intervals over jobs; `fingerprint` the
Table 3 fingerprint's sets and distance (docs/layout.md).
"""
