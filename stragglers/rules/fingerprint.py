"""What the fingerprint rules call (workflow/rules/fingerprint.smk, docs/fingerprint.md).

- every run: its own protocol's fingerprint, read from Table 3 (no replay);
- `snakemake fingerprint`: every method of the fingerprint sets that has a paper row replayed
  under `protocol: paper` (one job per dataset and method), then the same table from those.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd

from stragglers.evaluate.bootstrap import bootstrap_settings
from stragglers.evaluate.fingerprint import SET_NAMES, SETS
from stragglers.evaluate.metrics import normalise_method_name
from stragglers.formats.datasets import PAPER_TRACE_OF_KIND
from stragglers.io import write_csv_atomic
from stragglers.report.evaluation import paper_rows_for
from stragglers.report.fingerprint import write_paper_fingerprint

log = logging.getLogger(__name__)


def fingerprint_methods(paper_table: str, kinds: dict[str, str]) -> dict[str, list[str]]:
    """Per dataset (name -> trace kind): the methods of the fingerprint sets with a paper row
    for it, in the sets' order; datasets without a counterpart in the paper are left out."""
    paper = paper_rows_for(paper_table, kinds)
    out = {}
    for dataset in kinds:
        published = set(paper.loc[paper["dataset"] == dataset, "method"].map(normalise_method_name))
        methods = [
            m for name in SET_NAMES for m in SETS[name] if normalise_method_name(m) in published
        ]
        if methods:
            out[dataset] = methods
    return out


def protocol_label(replay: dict) -> str:
    """The protocol a dataset's predictions were made under, with any rule `overrides`
    (docs/protocols.md), as the fingerprint's `protocol` column names it."""
    protocol = str(replay.get("protocol", "causal"))
    overrides = replay.get("overrides") or {}
    if not overrides:
        return protocol
    flipped = ", ".join(f"{rule}={value}" for rule, value in sorted(overrides.items()))
    return f"{protocol} ({flipped})"


def fingerprint_target(methods: dict[str, list[str]], outputs: list[str]) -> list[str]:
    """The `fingerprint` target's inputs, or a clear error when no dataset has a paper row."""
    if not methods:
        raise ValueError(
            "snakemake fingerprint: no dataset of this config has a counterpart in the paper's "
            f"Table 3 (kinds {', '.join(PAPER_TRACE_OF_KIND)}): nothing to compare"
        )
    return outputs


def fingerprint_table(
    *,
    table3: str,
    paper: str,
    kinds: dict[str, str],
    protocols: dict[str, str],
    bootstrap: dict | None,
    csv: str,
    md: str,
    distances: str,
) -> pd.DataFrame:
    """Rule fingerprint_table: the run's fingerprint from its Table 3 (table3.csv: ours and our intervals) and the
    paper's numbers relabelled as Table 3 relabels them; `protocols`: dataset -> the protocol
    its predictions were made under."""
    from stragglers.report.fingerprint import fingerprint_rows, write_fingerprint

    ours = pd.read_csv(table3)
    rows = fingerprint_rows(ours, paper_rows_for(paper, kinds), protocols)
    protocol_names = ", ".join(f"`{p}`" for p in dict.fromkeys(protocols.values()))
    return write_fingerprint(
        rows,
        csv,
        md,
        distances,
        title=f"Table 3 fingerprint of this run (protocol {protocol_names})",
        confidence_level=bootstrap_settings(bootstrap)["confidence_level"],
    )


def fingerprint_replay(
    *,
    manifest: str,
    converted_jobs: Any,
    job_metrics: str,
    dataset: str,
    fingerprint_method: str,
    kind: str,
    method_params: dict,
    replay: dict,
    seed: int,
    tuning_jobs: int,
) -> pd.DataFrame:
    """Rule fingerprint_replay: one method over every job of the converted dataset whose
    manifest is `manifest` (`converted_jobs`: ordering only) under `protocol: paper`; its
    per-job metrics to `job_metrics`."""
    from stragglers.replay.service import protocol_job_metrics

    method = fingerprint_method
    metrics = protocol_job_metrics(
        converted_dir=str(Path(manifest).parent),
        dataset=dataset,
        kind=kind,
        methods={method: dict(method_params)},
        replay=dict(replay),
        protocol="paper",
        seed=int(seed),
        tuning_jobs=int(tuning_jobs),
    )
    write_csv_atomic(metrics, job_metrics)
    failed = int((metrics["status"] == "failed").sum())
    log.info("%s / %s under paper: %d jobs, %d failed", dataset, method, len(metrics), failed)
    return metrics


def fingerprint_paper_table(
    *,
    job_metrics: list[str],
    datasets: list[str],
    kinds: dict[str, str],
    paper: str,
    seed: int,
    bootstrap: dict | None,
    csv: str,
    md: str,
    distances: str,
    real_distances: str,
    real_per_job: str,
    real_datasets: list[str] = (),
) -> pd.DataFrame:
    """Rule fingerprint_paper_table: the `paper` fingerprint from the replays under `protocol:
    paper`, with each generated dataset's distance to the real datasets (`real_datasets`) of
    the same trace, over all and per real job (report.write_paper_fingerprint)."""
    metrics = pd.concat(
        [pd.read_csv(p, dtype={"job_id": str}) for p in job_metrics], ignore_index=True
    )
    return write_paper_fingerprint(
        metrics,
        datasets=datasets,
        kinds=kinds,
        paper=paper,
        seed=seed,
        bootstrap=bootstrap,
        csv=csv,
        md=md,
        distances=distances,
        real_distances=real_distances,
        real_per_job=real_per_job,
        real_datasets=real_datasets,
    )
