"""What the report rules call (workflow/rules/report.smk): the index of results/, the findings
page and the overview figure."""

from __future__ import annotations

from typing import Any

import pandas as pd

from stragglers.io import write_text_atomic
from stragglers.report.figures import plot_overview
from stragglers.report.findings import write_findings

RESULTS_INDEX = """# results/

Made by `snakemake` from `config/config.yaml`; every file here can be rebuilt from it.
Datasets: {datasets}. Methods: {methods}. Replay protocol: `{protocol}`, straggler threshold:
p{quantile:g} of each job's latencies, prediction starts when {start:g}% of a job's tasks finished.
Seed: {seed}.

| path | what it is |
|---|---|
| `figures/overview.png` | Open first: per dataset, every method's F1 and early-F1 with intervals (sorted, privileged methods apart) and the JCT reduction per mitigation policy for the Oracle, NURD and the best online method |
| `findings.md` | The run's headline statements, every number read from the tables below |
| `findings.sources.csv` | Where each number of findings.md comes from: file, row, column, full value |
| `tables/table3.md`, `.csv` | Paper Table 3: mean TPR, FPR, FNR, F1 over jobs per method, one Markdown table per dataset, grouped by family, with the paper's published numbers beside ours, early-TPR, early-F1 and median lead (how early the flags came); jobs evaluated / failed / unscorable per method; each headline number with its bootstrap interval over jobs (`<metric>_lo`, `<metric>_hi` in the CSV, `v [lo, hi]` in the Markdown) and ≈ for the methods statistically tied with the best. The CSV is long: one row per dataset and method |
| `tables/fingerprint.md`, `.csv` | The Table 3 fingerprint of this run's protocol (docs/fingerprint.md), read from Table 3: one row per dataset and method with a paper number, `set` (`calibration`, `validation`: the baselines; `held-out`: NURD, NURD-NC), our TPR, FPR, F1 with their intervals beside the paper's; the Markdown gives first each set's distance (the mean over its rows of the absolute TPR difference to the paper plus the absolute FPR difference, and how many rows it averages) |
| `tables/fingerprint_distances.csv` | Those distances: per dataset and set, `distance`, `rows` it averages, `of` the set's rows with a paper number |
| `fingerprint/fingerprint.md`, `.csv`, `fingerprint_distances.csv` | (with `snakemake fingerprint`) the same under `replay.protocol: paper`: every method with a paper row (21 baselines, NURD, NURD-NC) replayed the authors' way |
| `fingerprint/real_distances.csv` | (with the paper fingerprint) each generated dataset's distance to each real dataset of the same trace, per set: the real rows in place of the paper's, `loo_min` / `loo_max` with each real job left out of the target in turn |
| `fingerprint/<dataset>/<method>.csv` | (with `snakemake fingerprint`) that method's per-job metrics under `paper` (as `evaluation/job_metrics.csv`) |
| `tables/paired_comparisons.md`, `.csv` | Every method against the best non-privileged method (by mean F1, and by mean early-F1) and against NURD, per dataset: paired bootstrap difference over the jobs both scored, its interval, p-value, Holm-adjusted p-value and `tied` (docs/statistics.md) |
| `tables/summary_by_dataset.csv` | Table 3 in long form (one row per dataset and method, with F1 std over jobs) |
| `tables/paper_table3_relabelled.csv` | The paper's numbers (stragglers/data/paper_table3.csv) keyed by our dataset names |
| `tables/cost.md`, `.csv` | Seconds per job and per checkpoint for every method; Snakemake benchmark totals |
| `tables/completion_time.md`, `.csv` | Mean reduction in job completion time per method: Algorithm 2 and Algorithm 3 (mean over machine counts) |
| `<dataset>/predictions/<method>/shard-<k>.tasks.parquet` | One row per task of each job the method ran on: latency, start, end, is_straggler, evaluated, flagged, flag_time (NaN = never flagged) |
| `<dataset>/predictions/<method>/shard-<k>.jobs.parquet` | One row per job: status (ok / failed), reason of a failure, seconds, checkpoints, straggler threshold, prediction start |
| `<dataset>/evaluation/job_metrics.csv` | Per job and method: confusion matrix, TPR, FPR, FNR, precision, F1, status; early confusion matrix (only flags raised while elapsed < tau count), early-TPR, early-F1, early share, median lead |
| `<dataset>/evaluation/leads.csv` | One row per flagged true straggler: flag time, elapsed time at the flag, lead = (end - flag) / (end - start), early (elapsed < tau) |
| `<dataset>/evaluation/f1_over_time.csv` | Mean F1 over jobs at normalised times k/N of each job's span (Figures 2-3), with early-F1 and the median lead of the stragglers flagged by then |
| `<dataset>/evaluation/f1_over_time_per_job.csv` | The same per job |
| `<dataset>/figures/f1_over_time.png` | Figure 2/3 analogue: one panel per method family, NURD and the Oracle in each |
| `<dataset>/figures/lead.png` | Lead of the flagged stragglers per method, early and late flags apart |
| `<dataset>/simulation/<method>.parquet` | Per job, repeat and algorithm (unlimited, or limited with m machines): baseline and mitigated job completion time and the reduction |
| `<dataset>/simulation/reduction_unlimited.csv` | Mean reduction per method, Algorithm 2 (Figures 4-5) |
| `<dataset>/simulation/reduction_by_machines.csv` | Mean reduction per method and machine count, Algorithm 3 (Figures 6-7) |
| `<dataset>/figures/reduction_unlimited.png` | Figure 4/5 analogue |
| `<dataset>/figures/reduction_by_machines.png` | Figure 6/7 analogue |
| `<dataset>/figures/reduction_limited_mean.png` | Figure 8/9 analogue |
| `tables/reproduction_audit.md`, `.csv`, `figures/reproduction_audit.png` | (with `snakemake audit`) F1, TPR, FPR and JCT reductions of the audit methods from the paper's experiment (`replay.protocol: paper`) one rule at a time to `causal` (docs/protocols.md) |
| `<dataset>/audit/<variant>.csv` | (with `snakemake audit`) one protocol variant's rows of that table |
| `calibration/trials.csv`, `rounds.md`, `.csv`, `best_settings.yaml`, `methods.png`, `.csv` | (with `snakemake calibrate`) the generator's settings searched against the paper's Table 3 under `protocol: paper`: every trial, the distance per round, the best settings per dataset, ours against the paper per calibration method at the start and at the best (docs/calibration.md) |
| `tables/policies.md`, `.csv` | Per method and mitigation policy (relaunch, speculative copy, speculative resume): JCT reduction, machine time relative to no mitigation, PoCD per deadline factor, the reduction's bootstrap interval over jobs (`reduction_lo`, `reduction_hi`); Markdown one table per dataset (unlimited machines), CSV long with every machine count |
| `<dataset>/policies/<method>.parquet` | Per job, repeat, policy and machine count: baseline, mitigated and reference JCT, machine time with and without mitigation |
| `<dataset>/policies/summary.csv` | The dataset's rows of `tables/policies.csv` |
| `<dataset>/figures/pocd_vs_machine_time.png` | PoCD against machine time per method and policy (one panel per deadline factor where PoCD varies) |
| `<dataset>/figures/reduction_by_policy.png` | JCT reduction per method and policy |
| `<dataset>/tuning/<method>.json` | (with a `tuning` config) mean F1 of each grid point on the tuning jobs, which are left out of everything above, and the best point |
| `tables/launch_table.md`, `.csv` | (with `launch.methods`) Launch-time, cross-job models (Wrangler-node, MTL-*) scored like Table 3: a task flagged when it is placed; `jobs_without_model` = jobs predicted with too little finished data (nothing flagged) |
| `tables/launch_learning_curve.md`, `.csv` | The MTL paper's Table 5 / Figure 3: balanced accuracy, accuracy, TPR, FPR, F1 against the share of the trace used for training (temporal split, only jobs finished by the split), and the same on test tasks of nodes / workloads unseen in training (§4.8) |
| `tables/launch_simulation.md`, `.csv` | Predicted stragglers held back one scheduling interval at launch: JCT reduction, machine time, PoCD against Hadoop-NS (nothing held back) |
| `<dataset>/launch/<method>.{{tasks,jobs,curve,simulation}}.parquet` | Per launch-time method: its launch predictions (the predictions' format), jobs (training tasks and jobs behind each job's model), learning-curve rows and hold-back simulation rows |
| `<dataset>/figures/launch_learning_curve.png` | Figure 3 analogue: balanced accuracy, TPR and FPR against the training share |

Outside results/: `resources/raw/<dataset>/` (raw trace parts, generated or downloaded),
`resources/converted/<dataset>/` (one Parquet file per job, `manifest.parquet`, and
`report.json`: every row, task and job the conversion skipped, with its reason), `logs/` (one
log per rule run; a method's failure on a job is logged there with its traceback) and
`benchmarks/` (time and memory of the costly rules).
"""


def results_index(
    *,
    tables: list[str],
    index: str,
    datasets: list[str],
    methods: list[str],
    config: dict[str, Any],
) -> None:
    """Rule results_index: results/README.md, what every file in results/ is (`tables`: the
    tables it describes, ordering only)."""
    replay = config.get("replay", {})
    text = RESULTS_INDEX.format(
        datasets=", ".join(f"`{d}`" for d in datasets),
        methods=", ".join(f"`{m}`" for m in methods),
        protocol=replay.get("protocol", "causal"),
        quantile=100 * replay.get("straggler_quantile", 0.9),
        start=100 * replay.get("start_fraction", 0.04),
        seed=config.get("seed"),
    )
    write_text_atomic(text, index)


def findings(
    *,
    table3: str,
    paired: str,
    completion: str,
    policies: str,
    audit: list[str],
    fingerprint: str,
    fingerprint_paper: str | list,
    fingerprint_paper_distances: str | list,
    real_distances: str | list,
    md: str,
    sources: str,
    datasets: list[str],
    real_datasets: list[str],
    protocol: str,
    config_name: str,
) -> pd.DataFrame:
    """Rule findings: results/findings.md, the run's headline statements from its tables (the
    audit's when `snakemake audit` made it: `audit` is then its one table; the `paper`
    fingerprint's when the run replays it, `paper_fingerprint`, else empty lists)."""
    return write_findings(
        table3=table3,
        paired=paired,
        completion=completion,
        policies=policies,
        audit=audit[0] if audit else None,
        datasets=list(datasets),
        real_datasets=list(real_datasets),
        protocol=str(protocol),
        config_name=str(config_name),
        out_md=md,
        out_sources=sources,
        fingerprint=fingerprint,
        fingerprint_paper=fingerprint_paper or None,
        fingerprint_paper_distances=fingerprint_paper_distances or None,
        real_distances=real_distances or None,
    )


def overview(
    *, table3: str, policies: str, figure: str, datasets: list[str], protocol: str
) -> None:
    """Rule overview: results/figures/overview.png, the figure to open first."""
    plot_overview(
        pd.read_csv(table3),
        pd.read_csv(policies, dtype={"machines": str}),
        figure,
        datasets=list(datasets),
        protocol=str(protocol),
    )
