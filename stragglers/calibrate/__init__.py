"""Calibration of the generator to the paper's Table 3 (docs/calibration.md).

A seeded, resumable search over generator settings that minimises the calibration set's
fingerprint distance (stragglers.evaluate.fingerprint) under `protocol: paper`, one search per
generated dataset: settings.py reads and checks the config section, trial.py scores one
setting, search.py asks and tells Optuna in seeded rounds, outputs.py writes the tables and
the figure.
"""
