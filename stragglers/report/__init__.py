"""Report: tables, figures and the reproduction audit.

`tables` writes Table 3, the completion-time and policy tables and every figure; `audit` runs
and reports the ladder from the paper's protocol to ours. The flat names below are `tables`'.
"""

from stragglers import flat_api

# the flat API: every public name of these modules, loaded on first use
__getattr__ = flat_api(__name__, ("tables",))
