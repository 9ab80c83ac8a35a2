"""Replay: a method driven through a job's checkpoints, online.

`core` holds the settings and shared rules (the protocol presets are
stragglers.formats.protocols: methods read some of the rules), `wallclock` the replay on the
trace's clock, `aligned` / `aligned_replay` the reference script's aligned timeline, `history`
the finished jobs cross-job methods learn from, `runner` a method over a dataset's jobs,
`service` every caller's replay and scoring set up once, `tuning` the grid search on the
tuning jobs.
"""
