"""Traces: getting raw trace parts: `download` (verified, resumable), the raw CSV and tarball
readers (`rawcsv`, `tarstream`), `calibrate` (latency shape of a real trace) and `generate/`
(synthetic traces in the raw formats).
"""
