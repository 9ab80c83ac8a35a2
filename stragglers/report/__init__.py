"""Report: tables, figures and the reproduction audit.

`tables` writes Table 3, the completion-time and policy tables and their figures; `figures`
the other figures (F1 over time, PoCD, the overview); `audit` runs and reports the ladder from
the paper's protocol to ours; `findings` the findings page; `sensitivity` and `fingerprint`
their tables; `config_docs` docs/configuration.md (docs/layout.md).
"""
