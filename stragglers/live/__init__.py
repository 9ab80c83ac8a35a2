"""Live: watch a running Spark application through its monitoring REST API, record what its
event log cannot (running tasks' metrics as heartbeats report them), and run an online
method on each stage while it runs (docs/live.md).

client.py (HTTP), spark.py (the API's JSON -> attempts and windows), recording.py (the task
table written poll by poll), checkpoint.py (a stage's checkpoint from the recording so far),
polling.py (the poll loop), record.py and watch.py (the commands), replay.py (a recording
replayed offline at its poll times).
"""
