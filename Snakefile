# Online straggler prediction: trace -> per-job Parquet -> methods -> evaluation -> simulation.
# Rules live in workflow/rules/, one file per stage; input functions in common.smk.
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/predict.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/audit.smk"
include: "workflow/rules/fingerprint.smk"
include: "workflow/rules/launch.smk"
include: "workflow/rules/sensitivity.smk"
include: "workflow/rules/calibrate.smk"


rule all:
    default_target: True
    input:
        final_targets(),
