"""Seeded synthetic cluster traces written in the exact raw formats of the real ones.

`generate_google` writes Google clusterdata-2011-2 tables (job_events, task_events,
task_usage as headerless gzip CSV parts); `generate_alibaba` writes Alibaba 2018
`batch_instance.csv`. Both draw from the latent straggler model in
`stragglers.traces.generate.latent`; docs/generator.md describes the model and every knob.
"""

from stragglers.traces.generate.alibaba import AlibabaGeneratorConfig, generate_alibaba
from stragglers.traces.generate.google import GoogleGeneratorConfig, generate_google
from stragglers.traces.generate.latent import WorkloadConfig

__all__ = [
    "AlibabaGeneratorConfig",
    "GoogleGeneratorConfig",
    "WorkloadConfig",
    "generate_alibaba",
    "generate_google",
]
