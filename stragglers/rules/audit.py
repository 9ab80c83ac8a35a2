"""What the reproduction audit's rules call (workflow/rules/audit.smk): every audit method under
one protocol variant on one dataset, and the audit's table and figure (stragglers/report/audit.py,
docs/protocols.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from stragglers.report import audit as reproduction_audit


def audit_variant(
    *,
    manifest: str,
    converted_jobs: Any,
    rows: str,
    dataset: str,
    variant: str,
    kind: str,
    replay: dict[str, Any],
    methods: dict[str, dict[str, Any]],
    n_jobs: int,
    seed: int,
    machines: list[int],
    repeats: int,
    relaunch: str,
) -> pd.DataFrame:
    """Rule audit_variant: one row per audit method under `variant` on the converted dataset
    whose manifest is `manifest` (`converted_jobs`: ordering only)."""
    return reproduction_audit.run_variant(
        converted_dir=Path(manifest).parent,
        dataset=dataset,
        kind=kind,
        variant=variant,
        replay=dict(replay),
        methods={name: dict(entry) for name, entry in methods.items()},
        n_jobs=int(n_jobs),
        seed=seed,
        machines=list(machines),
        repeats=repeats,
        relaunch=relaunch,
        out=rows,
    )


def audit_table(
    *,
    variants: list[str],
    benchmarks: list[str],
    paper: str,
    csv: str,
    md: str,
    png: str,
    datasets: dict[str, str],
    methods: dict[str, dict[str, Any]],
    headline: list[str],
) -> pd.DataFrame:
    """Rule audit_table: results/tables/reproduction_audit.{csv,md} and its figure."""
    return reproduction_audit.audit_table(
        variant_files=list(variants),
        datasets=dict(datasets),
        methods={name: dict(entry) for name, entry in methods.items()},
        headline=tuple(headline),
        paper_table=paper,
        benchmark_files=list(benchmarks),
        out_csv=csv,
        out_md=md,
        out_png=png,
    )
