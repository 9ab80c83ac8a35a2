"""Simulate: job completion time when flagged tasks are mitigated.

`jct` is the paper's Algorithms 2-3 (relaunch at the flag); `policies` adds speculative copies,
speculative resume and deadlines (docs/simulation.md).
"""
