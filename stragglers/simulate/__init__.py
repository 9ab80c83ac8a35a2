"""Simulate: job completion time when flagged tasks are mitigated.

`jct` is the paper's Algorithms 2-3 (relaunch at the flag); `policies` adds speculative copies,
speculative resume and deadlines. The flat names below are `jct`'s.
"""

from stragglers import flat_api

# the flat API: every public name of these modules, loaded on first use
__getattr__ = flat_api(__name__, ("jct",))
