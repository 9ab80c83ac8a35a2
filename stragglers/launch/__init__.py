"""Launch-time, cross-job straggler prediction (Wrangler and its multi-task models): before a
task is placed, its machine's state predicts whether it will straggle; models learn from the
tasks of jobs that finished earlier. `tasks` builds the rows, `protocol` the temporal splits
and the online replay, `methods/` the models, `simulate` the hold-back mitigation."""
