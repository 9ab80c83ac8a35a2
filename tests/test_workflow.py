"""The whole pipeline end to end: the session's local run of tests/configs/tiny/config.yaml
(tests/workflow_runs.py; the cluster-generic and SLURM tests compare their runs with it)."""

import pandas as pd
import pytest

pytestmark = pytest.mark.e2e


def test_pipeline_end_to_end(reference_run, run_snakemake):
    reference = reference_run()
    reference.check()
    workdir = reference.workdir
    results = workdir / "results"
    for name in ("table3.md", "table3.csv", "cost.md", "completion_time.md"):
        assert (results / "tables" / name).stat().st_size > 0
    assert "NURD" in (results / "README.md").read_text()
    # the findings page quotes its tables exactly, and the overview exists
    from stragglers.report.findings import verify_findings

    page = (results / "findings.md").read_text()
    sources = pd.read_csv(results / "findings.sources.csv", dtype=str)
    sources["file"] = [str(workdir / f) for f in sources["file"]]
    assert "## google-tiny" in page and "NURD ranks" in page
    assert verify_findings(page, sources) == []
    assert (results / "figures" / "overview.png").stat().st_size > 1000
    for dataset in ("google-tiny", "alibaba-tiny"):
        for figure in (
            "f1_over_time",
            "lead",
            "reduction_unlimited",
            "reduction_by_machines",
            "reduction_limited_mean",
        ):
            assert (results / dataset / "figures" / f"{figure}.png").stat().st_size > 1000

    # launch-time models ran on both datasets (both kinds have machine state)
    launch = pd.read_csv(results / "tables" / "launch_table.csv")
    assert set(zip(launch["dataset"], launch["method"])) == {
        (d, m) for d in ("google-tiny", "alibaba-tiny") for m in ("MTL-f0nl", "Wrangler-node")
    }
    curve = pd.read_csv(results / "tables" / "launch_learning_curve.csv")
    assert sorted(curve["train_share"].unique()) == [0.3, 0.6]
    assert (results / "tables" / "launch_simulation.md").stat().st_size > 0
    assert (results / "google-tiny" / "figures" / "launch_learning_curve.png").stat().st_size > 1000

    summary = pd.read_csv(results / "tables" / "summary_by_dataset.csv")
    failing = summary[summary["method"] == "AlwaysFails"]
    assert (failing["jobs_evaluated"] == 0).all() and (failing["jobs_failed"] > 0).all()
    oracle = summary[summary["method"] == "Oracle"]
    assert (oracle["F1"] == 1.0).all()
    # the clock rule's flags are all late by definition; the Oracle's are early
    assert (summary.loc[summary["method"] == "Elapsed", "early_F1"] == 0.0).all()
    assert (oracle["early_share"] > 0.5).all()
    table3 = (results / "tables" / "table3.md").read_text()
    assert "## google-tiny" in table3 and "## alibaba-tiny" in table3 and "early-F1" in table3
    # bootstrap intervals over jobs and the paired comparisons (docs/statistics.md)
    table3_csv = pd.read_csv(results / "tables" / "table3.csv")
    for metric in ("F1", "TPR", "FPR", "early_F1", "median_lead"):
        assert {f"{metric}_lo", f"{metric}_hi"} <= set(table3_csv.columns)
    ok = table3_csv[table3_csv["jobs_evaluated"] >= 2]
    assert ((ok["F1_lo"] <= ok["F1"] + 1e-12) & (ok["F1"] <= ok["F1_hi"] + 1e-12)).all()
    assert (
        table3_csv.loc[table3_csv["method"] == "AlwaysFails", "interval_note"] == "no scored job"
    ).all()
    policies_csv = pd.read_csv(results / "tables" / "policies.csv")
    assert {"reduction_lo", "reduction_hi"} <= set(policies_csv.columns)
    paired = pd.read_csv(results / "tables" / "paired_comparisons.csv")
    assert set(paired["metric"]) == {"F1", "early_F1"}
    assert set(paired["reference_kind"]) == {"best", "NURD"}
    assert (workdir / "logs" / "tables" / "paired_comparisons.log").exists()
    jobs = pd.read_parquet(
        results / "google-tiny" / "predictions" / "AlwaysFails" / "shard-0.jobs.parquet"
    )
    assert (jobs["status"] == "failed").all()
    assert jobs["reason"].str.contains("fails on purpose").all()
    log = (workdir / "logs" / "predict" / "google-tiny" / "AlwaysFails" / "shard-0.log").read_text()
    assert "fails on purpose" in log
    report = (workdir / "resources" / "converted" / "google-tiny" / "report.json").read_text()
    assert "jobs_kept" in report

    # nothing left to do on a rerun of the same config
    dry = run_snakemake(workdir, reference.config, "-n")
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "Nothing to be done" in dry.stdout + dry.stderr
