"""Formats: the data contracts every stage shares.

`raw` is the raw traces' schemas, `datasets` the dataset kinds and their features, `jobs` the
converted job files and their manifest, `features` what a method sees of a job at a
checkpoint, `predictions` the prediction files' columns, `protocols` the replay protocols'
rules (the replay reads them, a method the ones it declares).
"""
