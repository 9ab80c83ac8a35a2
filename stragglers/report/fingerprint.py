"""The Table 3 fingerprint table: ours beside the paper's numbers per set (docs/fingerprint.md).

One row per dataset and method of the fingerprint sets (stragglers.evaluate.fingerprint) that
has a number in the paper's Table 3 for that dataset; ours are NaN where the run has no score
for it (not run, or failed on every job). The Markdown gives each set's distance per dataset
and how many rows it averages, then the rows.
"""

from __future__ import annotations

import pandas as pd

from stragglers.evaluate import bootstrap as boot
from stragglers.evaluate.fingerprint import SET_NAMES, SETS, row_distance, set_distance
from stragglers.evaluate.metrics import normalise_method_name, summary_table
from stragglers.formats.datasets import PAPER_TRACE_OF_KIND
from stragglers.io import write_csv_atomic, write_text_atomic
from stragglers.report.evaluation import paper_rows_for
from stragglers.report.tables import _with_interval, markdown_table

METRICS = ("TPR", "FPR", "F1")
INTERVALS = tuple(f"{m}_{side}" for m in METRICS for side in ("lo", "hi"))
COLUMNS = [
    "dataset",
    "protocol",
    "set",
    "method",
    *METRICS,
    *(f"paper_{m}" for m in METRICS),
    *INTERVALS,
]


def _key(frame: pd.DataFrame) -> pd.Series:
    return frame["dataset"].astype(str) + "\x00" + frame["method"].map(normalise_method_name)


def fingerprint_rows(
    ours: pd.DataFrame, paper: pd.DataFrame, protocols: dict[str, str]
) -> pd.DataFrame:
    """The fingerprint rows (columns COLUMNS) of the datasets in `protocols` (dataset ->
    protocol its numbers were measured under, in output order).

    `ours`: one row per (dataset, method) with TPR, FPR, F1 and, where measured, their
    `_lo` / `_hi` interval columns (Table 3's long CSV has them); `paper`: the paper's rows
    keyed by our dataset names (dataset, method, TPR, FPR, F1). Methods match ignoring case
    and punctuation, as Table 3 matches them. Rows follow the sets' order.
    """
    for name, frame, needed in (
        ("our table", ours, ["dataset", "method", *METRICS]),
        ("paper table", paper, ["dataset", "method", *METRICS]),
    ):
        missing = [c for c in needed if c not in frame.columns]
        if missing:
            raise ValueError(f"fingerprint: the {name} lacks columns {missing}")
    for name, frame in (("our table", ours), ("paper table", paper)):
        duplicated = _key(frame).duplicated()
        if duplicated.any():
            pairs = frame.loc[duplicated, ["dataset", "method"]].values.tolist()
            raise ValueError(f"fingerprint: the {name} has more than one row for {pairs}")
    members = pd.DataFrame(
        [
            {"set": name, "method": method, "_order": i}
            for i, (name, method) in enumerate(
                (name, method) for name in SET_NAMES for method in SETS[name]
            )
        ]
    )
    skeleton = pd.DataFrame(
        [
            {"dataset": d, "protocol": p, "_dataset_order": i}
            for i, (d, p) in enumerate(protocols.items())
        ],
        columns=["dataset", "protocol", "_dataset_order"],
    ).merge(members, how="cross")
    published = paper[["dataset", "method", *METRICS]].rename(
        columns={m: f"paper_{m}" for m in METRICS}
    )
    published = published.assign(_key=_key(published)).drop(columns=["dataset", "method"])
    rows = skeleton.assign(_key=_key(skeleton)).merge(published, on="_key", how="inner")
    measured = ours.reindex(columns=["dataset", "method", *METRICS, *INTERVALS])
    measured = measured.assign(_key=_key(measured)).drop(columns=["dataset", "method"])
    rows = rows.merge(measured, on="_key", how="left", validate="one_to_one")
    rows = rows.sort_values(["_dataset_order", "_order"], kind="stable")
    return rows[COLUMNS].reset_index(drop=True).astype({c: float for c in COLUMNS[4:]})


def fingerprint_distances(rows: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and set: the distance (stragglers.evaluate.fingerprint.set_distance), the
    rows it averages and the set's rows with a paper number (`of`)."""
    out = []
    for (dataset, protocol, name), part in rows.groupby(["dataset", "protocol", "set"], sort=False):
        distance, n = set_distance(part)
        out.append(
            {
                "dataset": dataset,
                "protocol": protocol,
                "set": name,
                "distance": distance,
                "rows": n,
                "of": len(part),
            }
        )
    return pd.DataFrame(out, columns=["dataset", "protocol", "set", "distance", "rows", "of"])


def caption(confidence_level: float | None) -> str:
    level = "" if confidence_level is None else f"{100 * confidence_level:g} % "
    return (
        "How far this run's Table 3 sits from the paper's (docs/fingerprint.md). The methods "
        "are split into fixed sets, chosen before any fitting: `calibration` (baselines a "
        "generator search may fit), `validation` (baselines only judged) and `held-out` "
        "(NURD and NURD-NC, in neither). The distance of a set is the mean, over its rows, of "
        "|TPR - paper TPR| + |FPR - paper FPR|; `rows` counts the rows it averages (rows "
        "with ours and the paper's TPR and FPR), `of` the set's rows with a paper number "
        "for that dataset. Below, one row per method: `set`; TPR (true positive rate), FPR "
        "(false positive rate) and F1, each the mean over the jobs the method scored, with "
        f"the {level}bootstrap interval over jobs in brackets (CSV: `<metric>_lo`, "
        "`<metric>_hi`; docs/statistics.md); `paper TPR`, `paper FPR`, `paper F1`: the "
        "paper's Table 3 (stragglers/data/paper_table3.csv; Google -> our google-2011 "
        "datasets, Alibaba -> our alibaba-2018 datasets, as in table3.csv); `|dTPR|+|dFPR|`: "
        "the row's distance. – where we have no score (the method was not run, or failed on "
        "every job). `protocol`: the replay protocol our numbers were measured under "
        "(docs/protocols.md)."
    )


def fingerprint_markdown(
    rows: pd.DataFrame,
    title: str,
    confidence_level: float | None = 0.95,
    real: pd.DataFrame | None = None,
) -> str:
    distances = fingerprint_distances(rows)
    parts = [f"# {title}", "", caption(confidence_level), ""]
    if rows.empty:
        parts += [
            "No dataset of this run has a counterpart in the paper's Table 3 (Google 2011 "
            "task_usage or Alibaba 2018): no fingerprint.",
            "",
        ]
        return "\n".join(parts)
    parts += ["## Distance per dataset and set", "", markdown_table(distances, 3)]
    if real is not None:
        parts += ["", *real_job_markdown(real, distances)]
    for dataset, part in rows.groupby("dataset", sort=False):
        display = pd.DataFrame({"set": part["set"].to_numpy(), "method": part["method"]})
        for metric in METRICS:
            display[metric] = _with_interval(part[metric].to_numpy(), part, metric, 2)
        for metric in METRICS:
            display[f"paper {metric}"] = part[f"paper_{metric}"].to_numpy()
        display["|dTPR|+|dFPR|"] = row_distance(part).to_numpy(dtype=float)
        protocol = part["protocol"].iloc[0]
        parts += [f"## {dataset} (protocol `{protocol}`)", "", markdown_table(display, 2)]
    return "\n".join(parts)


REAL_COLUMNS = ["dataset", "reference", "set", "distance", "rows", "of", "loo_min", "loo_max"]
PER_JOB_COLUMNS = ["dataset", "reference", "set", "job_id", "alone", "left_out", "job_to_rest"]


def _distances_to_real(
    summary_of, ours: pd.DataFrame, real_metrics: pd.DataFrame, generated: str
) -> pd.DataFrame:
    """Per fingerprint set, `ours`'s distance to the rows of `real_metrics`' jobs."""
    target = summary_of(real_metrics).assign(dataset=generated)
    rows = fingerprint_rows(ours, target, {generated: "paper"})
    return fingerprint_distances(rows).set_index("set")


def _in_dataset_order(frame: pd.DataFrame, datasets: list[str]) -> pd.DataFrame:
    order = {name: i for i, name in enumerate(datasets)}
    return frame.sort_values(
        ["dataset", "reference"], key=lambda c: c.map(order), kind="stable", ignore_index=True
    )


def real_job_breakdown(
    summary_of, metrics: pd.DataFrame, pairs: list[tuple[str, str]], datasets: list[str]
) -> pd.DataFrame:
    """Per (generated dataset, real dataset) pair of `pairs`, fingerprint set and real job: the
    distance to that job's rows alone (`alone`) and to the other jobs' (`left_out`), and the
    real job's own distance to the other jobs' rows (`job_to_rest`: how far one real job sits
    from the rest, the target's own noise). `summary_of(metrics)`: per (dataset, method)
    means over jobs (evaluate.metrics.summary_table)."""
    out = []
    for generated, real in pairs:
        ours = summary_of(metrics[metrics["dataset"] == generated])
        real_metrics = metrics[metrics["dataset"] == real]
        jobs = real_metrics["job_id"].astype(str)
        for job in sorted(jobs.unique()):
            one, rest = real_metrics[jobs == job], real_metrics[jobs != job]
            alone = _distances_to_real(summary_of, ours, one, generated)
            left_out = _distances_to_real(summary_of, ours, rest, generated)
            own = summary_of(one).assign(dataset=generated)
            apart = _distances_to_real(summary_of, own, rest, generated)
            for name in alone.index:
                out.append(
                    {
                        "dataset": generated,
                        "reference": real,
                        "set": name,
                        "job_id": job,
                        "alone": alone.loc[name, "distance"],
                        "left_out": left_out["distance"].get(name),
                        "job_to_rest": apart["distance"].get(name),
                    }
                )
    return _in_dataset_order(pd.DataFrame(out, columns=PER_JOB_COLUMNS), datasets)


def real_job_distances(
    summary_of,
    metrics: pd.DataFrame,
    pairs: list[tuple[str, str]],
    datasets: list[str],
    per_job: pd.DataFrame,
) -> pd.DataFrame:
    """Per (generated dataset, real dataset) pair of `pairs` and per fingerprint set: the
    fingerprint distance with the real dataset's rows in place of the paper's (the mean over
    the set's methods of |TPR - real TPR| + |FPR - real FPR|, both under `protocol: paper`),
    and its least and greatest value when each real job is left out in turn (`loo_min`,
    `loo_max`: how much one job moves the target), from `per_job` (real_job_breakdown's
    `left_out`)."""
    spread = per_job.groupby(["dataset", "reference", "set"])["left_out"].agg(["min", "max"])
    out = []
    for generated, real in pairs:
        ours = summary_of(metrics[metrics["dataset"] == generated])
        whole = _distances_to_real(summary_of, ours, metrics[metrics["dataset"] == real], generated)
        for name, row in whole.iterrows():
            key = (generated, real, name)
            out.append(
                {
                    "dataset": generated,
                    "reference": real,
                    "set": name,
                    "distance": row["distance"],
                    "rows": row["rows"],
                    "of": row["of"],
                    "loo_min": spread["min"].get(key, float("nan")),
                    "loo_max": spread["max"].get(key, float("nan")),
                }
            )
    return _in_dataset_order(pd.DataFrame(out, columns=REAL_COLUMNS), datasets)


def real_job_markdown(real: pd.DataFrame, paper_distances: pd.DataFrame) -> list[str]:
    """The distances to the real jobs beside each dataset's distance to the paper's Table 3
    (the real jobs' own: the floor under the generated data's)."""
    if real.empty:
        return []
    table = real.merge(
        paper_distances[["dataset", "set", "distance"]].rename(columns={"distance": "to Table 3"}),
        on=["dataset", "set"],
        how="left",
    ).merge(
        paper_distances[["dataset", "set", "distance"]].rename(
            columns={"dataset": "reference", "distance": "reference to Table 3"}
        ),
        on=["reference", "set"],
        how="left",
    )
    return [
        "## Distance to the real jobs",
        "",
        "Each generated dataset's distance to a real dataset of the same trace, with the real "
        "rows in place of the paper's (mean over the set's methods of |TPR - real TPR| + "
        "|FPR - real FPR|, both under `protocol: paper`); `loo_min` / `loo_max`: the least "
        "and greatest distance when each real job is left out of the target in turn. `to "
        "Table 3`: the generated dataset's distance to the paper's Table 3; `reference to "
        "Table 3`: the real jobs' own, the floor under it (docs/fingerprint.md).",
        "",
        markdown_table(table, 3),
    ]


def write_fingerprint(
    rows: pd.DataFrame,
    out_csv: str,
    out_md: str,
    out_distances: str,
    title: str,
    confidence_level: float | None = 0.95,
    real: pd.DataFrame | None = None,
    out_real: str | None = None,
    real_per_job: pd.DataFrame | None = None,
    out_real_per_job: str | None = None,
) -> pd.DataFrame:
    """The rows (`out_csv`), the distance per dataset and set (`out_distances`, what the
    findings page quotes), with `real` the distances to the real jobs (`out_real`) and
    `real_per_job` per real job (`out_real_per_job`), and the Markdown."""
    write_csv_atomic(rows, out_csv)
    write_csv_atomic(fingerprint_distances(rows), out_distances)
    if real is not None:
        write_csv_atomic(real, out_real)
    if real_per_job is not None:
        write_csv_atomic(real_per_job, out_real_per_job)
    write_text_atomic(fingerprint_markdown(rows, title, confidence_level, real), out_md)
    return rows


def real_pairs(
    datasets: list[str], kinds: dict[str, str], real_datasets: list[str]
) -> list[tuple[str, str]]:
    """(generated dataset, real dataset) for every real dataset of `real_datasets` among
    `datasets` and every other dataset of the same trace of the paper."""
    real = [d for d in datasets if d in set(real_datasets)]
    return [
        (generated, reference)
        for reference in real
        for generated in datasets
        if generated not in real
        and PAPER_TRACE_OF_KIND.get(kinds[generated]) == PAPER_TRACE_OF_KIND.get(kinds[reference])
    ]


def write_paper_fingerprint(
    metrics: pd.DataFrame,
    *,
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
    real_datasets: list[str],
) -> pd.DataFrame:
    """The `paper` fingerprint from the per-job `metrics` of the replays under `protocol:
    paper`: Table 3's means and bootstrap intervals over jobs (the same functions, seeds and
    settings as Table 3's) beside the paper's rows; `real_distances`: each generated dataset's
    distance to each real dataset of the same trace (`real_pairs`), the real rows as the
    target; `real_per_job`: the same per real job, alone and left out."""
    settings = boot.bootstrap_settings(bootstrap)
    ours = summary_table(metrics, dataset_order=datasets).merge(
        boot.table3_intervals(metrics, seed=seed, **settings),
        on=["dataset", "method"],
        how="left",
        validate="one_to_one",
    )
    rows = fingerprint_rows(ours, paper_rows_for(paper, kinds), {d: "paper" for d in datasets})
    pairs = real_pairs(list(datasets), kinds, list(real_datasets))
    per_job = real_job_breakdown(summary_table, metrics, pairs, list(datasets))
    return write_fingerprint(
        rows,
        csv,
        md,
        distances,
        title="Table 3 fingerprint under protocol `paper` (`snakemake fingerprint`)",
        confidence_level=settings["confidence_level"],
        real=real_job_distances(summary_table, metrics, pairs, list(datasets), per_job),
        out_real=real_distances,
        real_per_job=per_job,
        out_real_per_job=real_per_job,
    )
