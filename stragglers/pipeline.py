"""Glue between the Snakemake rules and the library: each function is one rule's work.

Rules stay thin (scripts/*.py read `snakemake.input/params/output` and call one function
here); everything here takes plain paths and values so it can be tested without Snakemake.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stragglers.datasets import FEATURES_BY_KIND, machine_state_columns
from stragglers.jobdata import Job, read_job
from stragglers.replay import ReplaySettings, run_method_on_jobs

log = logging.getLogger(__name__)


def write_parquet_atomic(frame: pd.DataFrame, path: Path | str) -> None:
    """Write to a temporary name and rename: a crash never leaves a complete-looking file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    frame.to_parquet(tmp, index=False)
    os.replace(tmp, path)


def write_text_atomic(text: str, path: Path | str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def read_manifest(converted_dir: Path | str) -> pd.DataFrame:
    path = Path(converted_dir) / "manifest.parquet"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no manifest; run the conversion first")
    return pd.read_parquet(path)


def tuning_job_ids(manifest: pd.DataFrame, n_jobs: int) -> list[str]:
    """The paper's tuning protocol sets aside a few jobs per dataset (6): here the first
    `n_jobs` by job id (the paper's Alibaba choice; its six Google jobs are not identified)."""
    return sorted(manifest["job_id"].astype(str))[:n_jobs] if n_jobs > 0 else []


def iter_shard_jobs(
    converted_dir: Path | str, kind: str, shard: int | None, skip_tuning_jobs: int = 0,
    only_jobs: list[str] | None = None, machine_state: bool = False,
) -> Iterator[Job]:
    """Jobs of one shard (None: all shards), without the tuning jobs, or only `only_jobs`;
    with `machine_state`, the kind's machine state columns too."""
    manifest = read_manifest(converted_dir)
    features = [f.column for f in FEATURES_BY_KIND[kind]]
    machine = machine_state_columns(kind) if machine_state else []
    selected = manifest if shard is None else manifest[manifest["shard"] == shard]
    if only_jobs is not None:
        selected = selected[selected["job_id"].astype(str).isin(only_jobs)]
    tuning = set(tuning_job_ids(manifest, skip_tuning_jobs))
    for row in selected.sort_values("job_id").itertuples():
        if str(row.job_id) in tuning:
            continue
        yield read_job(Path(converted_dir) / row.path, row.job_id, features, machine)


def last_columns(kind: str) -> np.ndarray:
    return np.array([f.aggregation == "last" for f in FEATURES_BY_KIND[kind]])


def replay_settings(dataset_config: dict[str, Any], replay_config: dict[str, Any]) -> ReplaySettings:
    """Global replay settings overlaid with the dataset's own grid."""
    merged = {**replay_config, **dataset_config.get("replay", {})}
    return ReplaySettings(**merged)


def predict_shard(
    *,
    converted_dir: Path | str,
    dataset: str,
    kind: str,
    shard: int,
    method: str,
    params: dict[str, Any],
    settings: ReplaySettings,
    seed: int,
    out_tasks: Path | str,
    out_jobs: Path | str,
    method_dirs: list[str] | None = None,
    tuning_jobs: int = 0,
    tuned_params: str | None = None,
) -> pd.DataFrame:
    """Replay one method over a shard. With `tuning_jobs`, the tuning jobs are left out; with
    `tuned_params` (a tune_method output), its best parameters override `params`."""
    # imported here: evaluation code paths never import method code
    from stragglers.methods import get_method, load_method_dirs

    load_method_dirs(method_dirs)
    method_class = get_method(method)
    if tuned_params:
        tuned = json.loads(Path(tuned_params).read_text())
        params = {**params, **tuned["best_params"]}
        log.info("%s: tuned parameters %s", method, tuned["best_params"])
    history = None
    if method_class.cross_job:  # learns from earlier jobs of every shard (CONTRACT B)
        from stragglers.history import JobHistory

        history = JobHistory(
            read_manifest(converted_dir), converted_dir, kind, seed=seed,
            machine_state=method_class.uses_machine_state,
        )
    tasks, jobs = run_method_on_jobs(
        iter_shard_jobs(
            converted_dir, kind, shard, skip_tuning_jobs=tuning_jobs,
            machine_state=method_class.uses_machine_state,
        ),
        method_class,
        params,
        settings,
        last_columns(kind),
        seed,
        dataset,
        history=history,
    )
    write_parquet_atomic(tasks, out_tasks)
    write_parquet_atomic(jobs, out_jobs)
    failed = jobs[jobs["status"] == "failed"]
    log.info(
        "%s / %s / shard %d: %d jobs, %d failed", dataset, method, shard, len(jobs), len(failed)
    )
    return jobs


def parameter_grid(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in the config's order."""
    import itertools

    for name, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ValueError(f"tuning.grids: {name} must be a non-empty list of values")
    names = list(grid)
    return [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))]


def tune_method(
    *,
    converted_dir: Path | str,
    dataset: str,
    kind: str,
    method: str,
    params: dict[str, Any],
    grid: dict[str, list[Any]],
    settings: ReplaySettings,
    seed: int,
    n_jobs: int,
    out: Path | str,
    method_dirs: list[str] | None = None,
) -> dict[str, Any]:
    """The paper's protocol: each grid point on the tuning jobs only; best mean F1 wins
    (ties: the first in grid order). The tuning jobs are left out of every evaluation."""
    from stragglers import evaluate
    from stragglers.methods import get_method, load_method_dirs

    load_method_dirs(method_dirs)
    method_class = get_method(method)
    job_ids = tuning_job_ids(read_manifest(converted_dir), n_jobs)
    jobs = list(iter_shard_jobs(
        converted_dir, kind, None, only_jobs=job_ids, machine_state=method_class.uses_machine_state
    ))
    history = None
    if method_class.cross_job:
        from stragglers.history import JobHistory

        history = JobHistory(
            read_manifest(converted_dir), converted_dir, kind, seed=seed,
            machine_state=method_class.uses_machine_state,
        )
    scores = []
    for point in parameter_grid(grid):
        tasks, job_rows = run_method_on_jobs(
            iter(jobs), method_class, {**params, **point}, settings, last_columns(kind), seed, dataset,
            history=history,
        )
        metrics = evaluate.job_metrics(tasks, job_rows)
        scored = metrics[metrics["status"] == "ok"]
        scores.append(
            {
                "params": point,
                "mean_F1": float(scored["F1"].mean()) if len(scored) else None,
                "jobs_scored": int(len(scored)),
                "jobs_failed": int((job_rows["status"] == "failed").sum()),
            }
        )
        log.info("%s %s: mean F1 %s", method, point, scores[-1]["mean_F1"])
    usable = [s for s in scores if s["mean_F1"] is not None]
    if not usable:
        raise RuntimeError(f"{method}: no grid point could be scored on the tuning jobs {job_ids}")
    best = max(usable, key=lambda s: s["mean_F1"])  # max keeps the first of equal scores
    result = {
        "dataset": dataset,
        "method": method,
        "tuning_jobs": job_ids,
        "base_params": params,
        "grid": scores,
        "best_params": best["params"],
        "best_mean_F1": best["mean_F1"],
    }
    dump_json(result, out)
    return result


def dump_json(data: Any, path: Path | str) -> None:
    write_text_atomic(json.dumps(data, indent=2, default=str) + "\n", path)


def setup_rule_logging(log_path: str | None) -> None:
    """Send the library's logging of one rule to its `log:` file (and stderr)."""
    handlers: list[logging.Handler] = [logging.StreamHandler()]
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="w"))
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=handlers,
        force=True,
    )
    logging.captureWarnings(True)


def run_rule(log_path: str | None, work) -> Any:
    """Run one rule's work with its logging set up; a failure is logged, then re-raised."""
    setup_rule_logging(log_path)
    try:
        return work()
    except Exception:
        log.exception("rule failed")
        raise


# ---------------------------------------------------------------------------------------------
# data
def generate_trace(*, kind: str, out_dir: Path | str, generator: dict[str, Any], seed: int) -> dict:
    """Write the synthetic trace of `kind`; the generator's own seed defaults to the config's."""
    from stragglers import generate

    settings = {"seed": seed, **generator}
    if kind == "google-2011":
        summary = generate.generate_google(out_dir, generate.GoogleGeneratorConfig.from_dict(settings))
    elif kind == "alibaba-2018":
        summary = generate.generate_alibaba(out_dir, generate.AlibabaGeneratorConfig.from_dict(settings))
    else:
        raise ValueError(f"no generator for dataset kind {kind!r}")
    log.info("generated %s trace in %s: %s", kind, out_dir, summary)
    return summary


from stragglers.scatter import (  # noqa: E402
    ALIBABA_ARCHIVES, GOOGLE_TABLES_NEEDED, alibaba_downloads, machine_tables_wanted,
)


def download_trace(*, kind: str, download: dict[str, Any], folder: str, out: str) -> dict:
    """Fetch what a dataset needs into `folder`, every file verified before it is kept (with
    `download.machine_tables`, default true, the machine tables too)."""
    from stragglers import download as fetch

    if kind in GOOGLE_TABLES_NEEDED:
        if "parts" not in download:
            raise ValueError("download.parts: which Google parts to fetch (e.g. \"0-4\" or \"all\")")
        tables = list(GOOGLE_TABLES_NEEDED[kind])
        if machine_tables_wanted(download):
            tables.append("machine_events")
        paths = fetch.download_google(
            folder,
            tables,
            download["parts"],
            base_url=download.get("base_url", fetch.GOOGLE_BASE_URL),
            total=int(download.get("parts_per_table", fetch.GOOGLE_PARTS_PER_TABLE)),
        )
    elif kind in ALIBABA_ARCHIVES:
        paths = [
            fetch.download(url, Path(folder) / archive, sha256=sha256)
            for archive, url, sha256 in alibaba_downloads(kind, download).values()
        ]
    else:
        raise ValueError(f"no download for dataset kind {kind!r}")
    result = {"kind": kind, "folder": folder, "files": [str(p) for p in paths]}
    dump_json(result, out)
    return result


def verify_local_trace(*, raw_dir: str, sha256sum: str, out: Path | str) -> dict:
    """Verify local raw parts against a SHA256SUM file; a mismatch stops the pipeline."""
    from stragglers.download import check_local_copy

    if sha256sum:
        verified = check_local_copy(raw_dir, sha256sum)
        if not verified:
            raise FileNotFoundError(f"none of the files listed in {sha256sum} is under {raw_dir}")
        result = {"raw_dir": raw_dir, "sha256sum": sha256sum, "verified": verified}
    else:
        log.warning("no sha256sum given for %s: parts used unverified", raw_dir)
        result = {"raw_dir": raw_dir, "sha256sum": None, "verified": []}
    dump_json(result, out)
    return result


def convert_trace(
    *,
    kind: str,
    raw_dir: str,
    out_dir: str,
    dataset: str,
    n_shards: int,
    min_tasks: int,
    priorities: list[int] | None = None,
    grid: dict[str, float] | None = None,
    latency_definition: str = "schedule_to_finish",
) -> dict:
    from stragglers.convert import convert_alibaba, convert_google, convert_google_events

    common = {"dataset": dataset, "n_shards": n_shards, "min_tasks": min_tasks}
    if kind == "google-2011":
        return convert_google(
            raw_dir,
            out_dir,
            **common,
            priorities=tuple(priorities or (9, 10, 11)),
            latency_definition=latency_definition,
        )
    if kind == "google-2011-events":
        grid = grid or {}
        return convert_google_events(
            raw_dir,
            out_dir,
            **common,
            priorities=tuple(priorities or (9, 10, 11)),
            grid_origin=float(grid.get("grid_origin", 600.0)),
            window_seconds=float(grid.get("checkpoint_interval", 300.0)),
        )
    if kind in ("alibaba-2018", "alibaba-2017"):
        return convert_alibaba(raw_dir, out_dir, **common, kind=kind)
    raise ValueError(f"no converter for dataset kind {kind!r}")


# ---------------------------------------------------------------------------------------------
# evaluation
def write_csv_atomic(frame: pd.DataFrame, path: Path | str) -> None:
    write_text_atomic(frame.to_csv(index=False), path)


def evaluate_dataset(
    *,
    task_files: list[str],
    job_files: list[str],
    dataset: str,
    n_points: int,
    out_job_metrics: str,
    out_f1_per_job: str,
    out_f1_mean: str,
    out_figure: str,
    out_leads: str | None = None,
    out_lead_figure: str | None = None,
) -> pd.DataFrame:
    from stragglers import evaluate, report
    from stragglers.scoring import timing

    # one method at a time: memory is bounded by one method's predictions, not all of them
    by_method: dict[str, tuple[list[str], list[str]]] = {}
    for path in task_files:
        by_method.setdefault(Path(path).parent.name, ([], []))[0].append(path)
    for path in job_files:
        by_method.setdefault(Path(path).parent.name, ([], []))[1].append(path)
    metric_frames, per_job_frames, mean_frames, lead_frames = [], [], [], []
    for method, (method_tasks, method_jobs) in by_method.items():
        tasks, jobs = evaluate.load_predictions(method_tasks, method_jobs)
        # how early the flags came (lead, early-F1) beside the confusion-matrix metrics
        metric_frames.append(evaluate.job_metrics(tasks, jobs).merge(
            timing.timing_job_metrics(tasks, jobs, validated=True), on=evaluate.KEYS, how="left"))
        per_job, mean = evaluate.f1_over_time(tasks, jobs, n_points=n_points)
        lead_per_job, lead_mean = timing.lead_over_time(tasks, jobs, n_points=n_points,
                                                            validated=True)
        per_job_frames.append(per_job.merge(lead_per_job, on=[*evaluate.KEYS, "k"], how="left"))
        mean_frames.append(mean.merge(lead_mean, on=["dataset", "method", "k"], how="left"))
        lead_frames.append(timing.flag_leads(tasks, jobs, validated=True))
        del tasks, jobs
    metrics = pd.concat(metric_frames, ignore_index=True)
    per_job = pd.concat(per_job_frames, ignore_index=True)
    mean = pd.concat(mean_frames, ignore_index=True)
    leads = pd.concat(lead_frames, ignore_index=True)
    write_csv_atomic(metrics, out_job_metrics)
    write_csv_atomic(per_job, out_f1_per_job)
    write_csv_atomic(mean, out_f1_mean)
    if out_leads is not None:
        write_csv_atomic(leads, out_leads)
    report.plot_f1_over_time(mean, out_figure, dataset)
    if out_lead_figure is not None:
        report.plot_lead_distribution(leads, metrics, out_lead_figure, dataset)
    return metrics


def paper_rows_for(paper_table: str, kinds: dict[str, str]) -> pd.DataFrame:
    """The paper's Table 3 rows re-labelled with our dataset names (matched by trace kind)."""
    from stragglers.report import read_paper_table3

    paper = read_paper_table3(paper_table)
    published = {"google-2011": "google", "alibaba-2018": "alibaba"}
    frames = []
    for dataset, kind in kinds.items():
        rows = paper[paper["dataset"].str.lower() == published.get(kind, "")].copy()
        rows["dataset"] = dataset
        frames.append(rows)
    return pd.concat(frames, ignore_index=True)


def table3(
    *,
    job_metric_files: list[str],
    datasets: list[str],
    kinds: dict[str, str],
    paper_table: str,
    out_csv: str,
    out_md: str,
    out_summary: str,
    lead_files: list[str] | None = None,
) -> pd.DataFrame:
    from stragglers import evaluate, report
    from stragglers.scoring import timing

    metrics = pd.concat([pd.read_csv(p, dtype={"job_id": str}) for p in job_metric_files], ignore_index=True)
    summary = evaluate.summary_table(metrics, dataset_order=datasets)
    if lead_files:
        leads = pd.concat([pd.read_csv(p, dtype={"job_id": str}) for p in lead_files],
                          ignore_index=True)
        summary = summary.merge(timing.timing_summary(metrics, leads),
                                on=["dataset", "method"], how="left")
    write_csv_atomic(summary, out_summary)
    paper_path = Path(out_csv).with_name("paper_table3_relabelled.csv")
    write_csv_atomic(paper_rows_for(paper_table, kinds), paper_path)
    report.write_table3(summary, out_csv, out_md, paper_table3_path=paper_path, dataset_order=datasets)
    return summary


def cost_table(*, job_files: list[str], benchmark_files: list[str], out_csv: str, out_md: str) -> pd.DataFrame:
    from stragglers import evaluate, report

    jobs = pd.concat([pd.read_parquet(p) for p in job_files], ignore_index=True)
    cost = evaluate.cost_table(jobs)
    bench_rows = []
    for path in benchmark_files:
        parts = Path(path).parts  # benchmarks/predict/<dataset>/<method>/shard-<k>.tsv
        frame = pd.read_csv(path, sep="\t")
        bench_rows.append(
            {"dataset": parts[-3], "method": parts[-2], "rule_seconds": float(frame["s"].iloc[0]),
             "max_rss_mb": float(pd.to_numeric(frame["max_rss"], errors="coerce").iloc[0])}
        )
    bench = (
        pd.DataFrame(bench_rows)
        .groupby(["dataset", "method"], sort=False)
        .agg(rule_seconds_total=("rule_seconds", "sum"), max_rss_mb=("max_rss_mb", "max"))
        .reset_index()
    )
    cost = cost.merge(bench, on=["dataset", "method"], how="left")
    report.write_table(
        cost,
        out_csv,
        out_md,
        title="Cost per method",
        caption=(
            "Wall time of each method in the online replay: seconds per job (mean, std), "
            "seconds per checkpoint (total seconds / checkpoints asked to predict), and the "
            "Snakemake benchmark of the prediction rules (rule_seconds_total: all shards, "
            "including reading the jobs; max_rss_mb: peak memory of one shard). One core each."
        ),
    )
    return cost


# ---------------------------------------------------------------------------------------------
# completion-time simulation
def simulate_method(
    *,
    task_files: list[str],
    job_files: list[str],
    grid_origin: float,
    checkpoint_interval: float,
    machines: list[int],
    repeats: int,
    seed: int,
    out: str,
    aligned_timeline: bool = False,
    relaunch: str = "from_flag",
) -> pd.DataFrame:
    """With `aligned_timeline` (replay.protocol paper) every task runs [0, latency) and a flag
    time is (k + 1) * interval: the grid starts at 0 and a task already over by its flag's time
    is not relaunched (stragglers.aligned.simulation_flags).

    Every reading of the relaunch (simulation.RELAUNCH_READINGS) is simulated, with the same
    draws; column `reading` names it and `primary` marks the configured one
    (`simulation.relaunch`), which the per-dataset tables and figures show."""
    from stragglers import aligned, evaluate, simulate

    simulate.relaunch_reading(relaunch)  # an unknown setting stops here, named
    readings = [relaunch] + [r for r in simulate.RELAUNCH_READINGS if r != relaunch]
    if aligned_timeline:
        grid_origin = 0.0
    tasks, jobs = evaluate.load_predictions(task_files, job_files)
    frames = []
    ok_jobs = set(jobs.loc[jobs["status"] == "ok", "job_id"])
    for (dataset, method, job_id), job_tasks in tasks.groupby(["dataset", "method", "job_id"], sort=False):
        if job_id not in ok_jobs:
            continue
        job_tasks = job_tasks.sort_values("task")
        latency = job_tasks["latency"].to_numpy(float)
        flag_time = job_tasks["flag_time"].to_numpy(float)
        if aligned_timeline:
            flag_time = aligned.simulation_flags(flag_time, job_tasks["task_end"].to_numpy(float))
        uniforms = simulate.replacement_uniforms(str(job_id), len(latency), repeats, seed)
        for reading in readings:
            relaunch_from, pool = simulate.relaunch_reading(reading)
            frame = simulate.simulate_job(
                job_tasks["task_start"].to_numpy(float),
                job_tasks["task_end"].to_numpy(float),
                flag_time,
                simulate.replacement_durations(
                    simulate.draw_pool(latency, job_tasks["is_straggler"].to_numpy(bool), pool),
                    uniforms),
                grid_origin=grid_origin,
                machines=machines,
                checkpoint_interval=checkpoint_interval,
                job_id=str(job_id),
                relaunch_from=relaunch_from,
            )
            frame.insert(0, "job_id", str(job_id))
            frame.insert(0, "method", method)
            frame.insert(0, "dataset", dataset)
            frame["reading"] = reading
            frame["primary"] = reading == relaunch
            frames.append(frame)
    result = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["dataset", "method", "job_id", *simulate.RESULT_COLUMNS, "reading", "primary"]
    )
    write_parquet_atomic(result, out)
    log.info("simulated %d jobs (%d skipped as failed)", len(frames) // len(readings),
             int((jobs["status"] != "ok").sum()))
    return result


def simulation_report(
    *,
    simulation_files: list[str],
    dataset: str,
    out_unlimited_csv: str,
    out_limited_csv: str,
    out_unlimited_png: str,
    out_by_machines_png: str,
    out_limited_mean_png: str,
    out_readings_csv: str | None = None,
) -> None:
    from stragglers import report

    every = pd.concat([pd.read_parquet(p) for p in simulation_files], ignore_index=True)
    if out_readings_csv is not None:
        write_csv_atomic(relaunch_readings_table(every), out_readings_csv)
    frame = every[every["primary"]].drop(columns=["reading", "primary"]) if "primary" in every else every
    unlimited_table, by_machines_table = report.simulation_tables(frame)
    write_csv_atomic(unlimited_table, out_unlimited_csv)
    write_csv_atomic(by_machines_table, out_limited_csv)
    unlimited = frame[frame["algorithm"] == "unlimited"]
    limited = frame[frame["algorithm"] == "limited"]
    report.plot_reduction_bars(
        unlimited, out_unlimited_png, f"{dataset}: more machines than tasks (Algorithm 2)"
    )
    report.plot_reduction_by_machines(limited, out_by_machines_png, f"{dataset}: m machines (Algorithm 3)")
    report.plot_reduction_bars(
        limited, out_limited_mean_png, f"{dataset}: Algorithm 3, mean over machine counts"
    )


def relaunch_readings_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, method, reading): mean reduction over jobs under Algorithm 2 and under
    Algorithm 3 averaged over machine counts (a job's value: its mean over repeats / machine
    counts), and whether the reading is the configured one."""
    keys = ["dataset", "method", "reading"]
    per_job = frame.groupby([*keys, "primary", "job_id", "algorithm"], sort=False)["reduction"].mean()
    table = per_job.groupby([*keys, "primary", "algorithm"], sort=False).mean().unstack("algorithm")
    table = table.reset_index().rename(columns={"unlimited": "reduction_unlimited",
                                                "limited": "reduction_limited_mean_over_m"})
    return table[[*keys, "primary", "reduction_unlimited", "reduction_limited_mean_over_m"]]


def completion_time_table(
    *, unlimited_files: list[str], limited_files: list[str], datasets: list[str], out_csv: str, out_md: str,
    readings_files: list[str] | None = None,
) -> pd.DataFrame:
    from stragglers import report

    rows = []
    for dataset, unlimited_path, limited_path in zip(datasets, unlimited_files, limited_files):
        unlimited = pd.read_csv(unlimited_path)
        limited = pd.read_csv(limited_path)
        mean_limited = limited.groupby("method", sort=False)["reduction_mean"].mean()
        for row in unlimited.itertuples():
            rows.append(
                {
                    "dataset": dataset,
                    "method": row.method,
                    "jobs": int(row.n_jobs),
                    "reduction_unlimited": row.reduction_mean,
                    "reduction_unlimited_std": row.reduction_std,
                    "reduction_limited_mean_over_m": mean_limited.get(row.method, np.nan),
                }
            )
    table = pd.DataFrame(rows)
    for dataset, path in zip(datasets, readings_files or []):
        # the other readings of the relaunch (simulation.RELAUNCH_READINGS), as columns
        readings = pd.read_csv(path)
        readings = readings[~readings["primary"].astype(bool)]
        for reading, part in readings.groupby("reading", sort=False):
            part = part.set_index("method")
            mask = table["dataset"] == dataset
            for column in ("reduction_unlimited", "reduction_limited_mean_over_m"):
                table.loc[mask, f"{column}_{reading}"] = table.loc[mask, "method"].map(part[column])
    report.write_table(
        table,
        out_csv,
        out_md,
        title="Reduction in job completion time",
        caption=(
            "Fraction by which job completion time drops when predicted stragglers are killed at "
            "their flag time and relaunched with a duration drawn from the job's own latencies "
            "(same draws for every method). reduction_unlimited: Algorithm 2 (mean over repeats, "
            "then over jobs; std over jobs). reduction_limited_mean_over_m: Algorithm 3 averaged "
            "over the configured machine counts (paper Figures 8-9). Negative values: relaunching "
            "made jobs slower. Model: docs/simulation.md. Columns ending in a reading's name: "
            "the same under the other readings of Section 7.3 (simulation.relaunch; "
            "replace_latency: a copy ends at the task's start + the draw, ignoring the time the "
            "killed attempt ran; _non_straggler: drawn from the non-stragglers' latencies), "
            "which decide the sign of the result (docs/simulation.md)."
        ),
    )
    return table


RESULTS_INDEX = """# results/

Made by `snakemake` from `config/config.yaml`; every file here can be rebuilt from it.
Datasets: {datasets}. Methods: {methods}. Replay protocol: `{protocol}`, straggler threshold:
p{quantile:g} of each job's latencies, prediction starts when {start:g}% of a job's tasks finished.
Seed: {seed}.

| path | what it is |
|---|---|
| `tables/table3.md`, `.csv` | Paper Table 3: mean TPR, FPR, FNR, F1 over jobs per method, one Markdown table per dataset, grouped by family, with the paper's published numbers beside ours, early-TPR, early-F1 and median lead (how early the flags came); jobs evaluated / failed / unscorable per method. The CSV is long: one row per dataset and method |
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
| `<dataset>/figures/f1_over_time.png` | Figure 2/3 analogue |
| `<dataset>/figures/lead.png` | Lead of the flagged stragglers per method, early and late flags apart |
| `<dataset>/simulation/<method>.parquet` | Per job, repeat and algorithm (unlimited, or limited with m machines): baseline and mitigated job completion time and the reduction |
| `<dataset>/simulation/reduction_unlimited.csv` | Mean reduction per method, Algorithm 2 (Figures 4-5) |
| `<dataset>/simulation/reduction_by_machines.csv` | Mean reduction per method and machine count, Algorithm 3 (Figures 6-7) |
| `<dataset>/figures/reduction_unlimited.png` | Figure 4/5 analogue |
| `<dataset>/figures/reduction_by_machines.png` | Figure 6/7 analogue |
| `<dataset>/figures/reduction_limited_mean.png` | Figure 8/9 analogue |
| `tables/reproduction_audit.md`, `.csv`, `figures/reproduction_audit.png` | (with `snakemake audit`) F1, TPR, FPR and JCT reductions of the audit methods from the paper's experiment (`replay.protocol: paper`) one rule at a time to `causal` (docs/protocols.md) |
| `<dataset>/audit/<variant>.csv` | (with `snakemake audit`) one protocol variant's rows of that table |
| `tables/policies.md`, `.csv` | Per method and mitigation policy (relaunch, speculative copy, speculative resume): JCT reduction, machine time relative to no mitigation, PoCD per deadline factor; Markdown one table per dataset (unlimited machines), CSV long with every machine count |
| `<dataset>/policies/<method>.parquet` | Per job, repeat, policy and machine count: baseline, mitigated and reference JCT, machine time with and without mitigation |
| `<dataset>/policies/summary.csv` | The dataset's rows of `tables/policies.csv` |
| `<dataset>/figures/pocd_vs_machine_time.png` | PoCD against machine time per method and policy (one panel per deadline factor) |
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


def results_index(*, datasets: list[str], methods: list[str], config: dict[str, Any], out: str) -> None:
    replay = config.get("replay", {})
    text = RESULTS_INDEX.format(
        datasets=", ".join(f"`{d}`" for d in datasets),
        methods=", ".join(f"`{m}`" for m in methods),
        protocol=replay.get("protocol", "causal"),
        quantile=100 * replay.get("straggler_quantile", 0.9),
        start=100 * replay.get("start_fraction", 0.04),
        seed=config.get("seed"),
    )
    write_text_atomic(text, out)
