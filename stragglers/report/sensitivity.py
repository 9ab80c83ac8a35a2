"""The replicate table (rank stability) and the sensitivity map (who leads where).

Both rank methods the way Table 3 does: by the mean over scored jobs, privileged methods
(Oracle, Wrangler) outside the ranking. Leaders and ties on the map come from the paired
bootstrap with Holm's correction (stragglers.evaluate.bootstrap.paired_comparisons), the same
machinery as results/tables/paired_comparisons.md; intervals from the same bootstrap over jobs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

# the policies of the map (unlimited machines): JCT reduction when a flag relaunches the task,
# and when it starts a speculative copy that resumes from the last checkpoint
JCT_POLICIES = {"jct_relaunch": "relaunch", "jct_resume": "resume"}
LEADER_METRICS = ("F1", "early_F1")
PAPER_SUFFIX = " (paper)"


# ---------------------------------------------------------------------------------------------
# replicates


def replicate_summary(job_metrics: pd.DataFrame, dataset: str, replicate: int) -> pd.DataFrame:
    """One replicate's per-method means (F1, early-F1) and its F1 rank among non-privileged
    methods (1 = best; equal means share the better rank)."""
    from stragglers.evaluate.bootstrap import comparison_summary

    summary = comparison_summary(job_metrics)
    columns = ["method", "family", "privileged", "F1"] + (
        ["early_F1"] if "early_F1" in summary else []
    )
    out = summary[columns].copy()
    out.insert(0, "replicate", int(replicate))
    out.insert(0, "dataset", dataset)
    fair = ~out["privileged"].astype(bool)
    out["rank"] = np.nan
    out.loc[fair, "rank"] = out.loc[fair, "F1"].rank(ascending=False, method="min")
    return out


def replicate_table(summaries: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, method) over replicates: mean, sd (ddof 1), min and max of F1 (and mean
    and sd of early-F1), the F1 rank in each replicate (rank_r<k>), the mean rank, and how
    often the method is best (times_best: replicates where its rank is 1, ties included)."""
    rows = []
    for (dataset, method), part in summaries.groupby(["dataset", "method"], sort=False):
        part = part.sort_values("replicate")
        row: dict[str, Any] = {
            "dataset": dataset,
            "method": method,
            "privileged": bool(part["privileged"].iloc[0]),
            "replicates": int(len(part)),
            "F1_mean": part["F1"].mean(),
            "F1_sd": part["F1"].std(ddof=1),
            "F1_min": part["F1"].min(),
            "F1_max": part["F1"].max(),
        }
        if "early_F1" in part:
            row["early_F1_mean"] = part["early_F1"].mean()
            row["early_F1_sd"] = part["early_F1"].std(ddof=1)
        row["mean_rank"] = part["rank"].mean()
        row["times_best"] = int((part["rank"] == 1).sum())
        row["best_share"] = row["times_best"] / len(part)
        for replicate, rank in zip(part["replicate"], part["rank"], strict=True):
            row[f"rank_r{int(replicate)}"] = rank
        rows.append(row)
    table = pd.DataFrame(rows)
    ranks = sorted(
        (c for c in table if c.startswith("rank_r")), key=lambda c: int(c.removeprefix("rank_r"))
    )
    first = [c for c in table if not c.startswith("rank_r")]
    table = table[first + ranks]
    return table.sort_values(
        ["dataset", "privileged", "mean_rank", "method"], kind="stable"
    ).reset_index(drop=True)


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _markdown_table(frame: pd.DataFrame) -> list[str]:
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(_fmt(v) for v in row) + " |")
    return lines


def replicate_markdown(table: pd.DataFrame) -> str:
    n = int(table["replicates"].max()) if len(table) else 0
    lines = [
        "# Replicates: rank stability",
        "",
        f"Each generated dataset regenerated with {n} seed(s) derived from the config's seed "
        "(replicate 1 = the default run's data; `replicates` setting, docs/sensitivity.md), "
        "every method run on each. Per method: F1 mean, sd, min and max across replicates, "
        "early-F1 mean and sd, its F1 rank among the non-privileged methods in each replicate "
        "(rank_r<k>; 1 = best, equal means share a rank), the mean rank, and times_best: in "
        "how many replicates it ranks first (rank stability). Privileged methods are not ranked.",
        "",
    ]
    whole = ["replicates", "times_best"] + [c for c in table if c.startswith("rank_r")]
    for dataset, part in table.groupby("dataset", sort=False):
        part = part.astype({c: "Int64" for c in whole})  # ranks and counts print as integers
        lines += [f"## {dataset}", ""]
        lines += _markdown_table(part.drop(columns=["dataset"]).dropna(axis=1, how="all"))
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# the sensitivity map


def point_table(
    point: str,
    job_metrics: pd.DataFrame,
    policies: pd.DataFrame,
    *,
    seed: int,
    bootstrap: dict,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One grid point: per method the means and intervals of F1, early-F1 and the two JCT
    reductions; and per leader metric the leader among the configured protocol's
    non-privileged methods and the methods tied with it (paired bootstrap, Holm)."""
    from stragglers.evaluate import bootstrap as boot

    job_metrics = job_metrics.assign(dataset=point)
    summary = boot.comparison_summary(job_metrics)
    intervals = boot.table3_intervals(job_metrics, seed=seed, **bootstrap)
    keep = ["dataset", "method", "family", "privileged", "jobs_evaluated", "F1", "early_F1"]
    table = summary[[c for c in keep if c in summary]].merge(
        intervals.drop(columns=["interval_note"]), on=["dataset", "method"], how="left"
    )
    unlimited = policies[policies["machines"].astype(str) == "unlimited"]
    for column, policy in JCT_POLICIES.items():
        rows = unlimited[unlimited["policy"] == policy].set_index("method")
        for suffix, source in (("", "reduction"), ("_lo", "reduction_lo"), ("_hi", "reduction_hi")):
            table[column + suffix] = table["method"].map(rows[source]) if len(rows) else np.nan
    table["protocol"] = np.where(table["method"].str.endswith(PAPER_SUFFIX), "paper", "configured")
    configured = job_metrics[~job_metrics["method"].str.endswith(PAPER_SUFFIX)]
    comparisons = boot.paired_comparisons(
        configured,
        summary[~summary["method"].str.endswith(PAPER_SUFFIX)],
        seed=seed,
        **bootstrap,
    )
    leaders = []
    for metric in LEADER_METRICS:
        table[f"leads_{metric}"] = table[f"tied_{metric}"] = False
    for metric in LEADER_METRICS:
        rows = comparisons[
            (comparisons["metric"] == metric) & (comparisons["reference_kind"] == "best")
        ]
        if rows.empty:
            continue
        leader = str(rows["reference"].iloc[0])
        tied = rows.loc[rows["tied"].fillna(False).astype(bool), "method"].tolist()
        table.loc[table["method"] == leader, f"leads_{metric}"] = True
        table.loc[table["method"].isin(tied), f"tied_{metric}"] = True
        leaders.append(
            {
                "point": point,
                "metric": metric,
                "leader": leader,
                "leader_mean": float(summary.set_index("method").loc[leader, metric]),
                "tied": ", ".join(tied),
                "n_tied": len(tied),
            }
        )
    return table.rename(columns={"dataset": "point"}), pd.DataFrame(leaders)


def sensitivity_table(
    points: dict[str, dict],
    job_metrics: dict[str, pd.DataFrame],
    policies: dict[str, pd.DataFrame],
    measured: dict[str, dict],
    *,
    seed: int,
    bootstrap: dict,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every point's table (point_table) with its grid position, generator settings and
    measured predictability (spearman, auc) and tail; and the who-leads-where rows.
    `bootstrap`: keyword arguments of the bootstrap (n_resamples, confidence_level, method)."""
    tables, leaders = [], []
    for name, point in points.items():
        table, leading = point_table(
            name, job_metrics[name], policies[name], seed=seed, bootstrap=bootstrap
        )
        position = {
            "signal": point["signal"],
            "tail": point["tail"],
            **point["settings"],
            "spearman": measured[name]["spearman"],
            "auc": measured[name]["auc"],
            "tail_max_over_p90": measured[name]["tail"],
        }
        for frame in (table, leading):
            for offset, (key, value) in enumerate(position.items()):
                frame.insert(1 + offset, key, value)
        tables.append(table)
        leaders.append(leading)
    return pd.concat(tables, ignore_index=True), pd.concat(leaders, ignore_index=True)


def crossovers(table: pd.DataFrame, method: str = "NURD", metric: str = "F1") -> pd.DataFrame:
    """Per tail level: the points (by rising predictability) where `method` leads or is tied
    with the leader on `metric`, and the crossover: the lowest measured predictability from
    which it leads or is tied at every more predictable point of that tail level (NaN: never,
    at the most predictable point it is behind)."""
    rows = []
    mine = table[(table["method"] == method) & (table["protocol"] == "configured")]
    for tail, part in mine.groupby("tail", sort=True):
        part = part.sort_values("spearman")
        top = part[f"leads_{metric}"].to_numpy(bool) | part[f"tied_{metric}"].to_numpy(bool)
        crossover = np.nan
        for position in range(len(part) - 1, -1, -1):
            if not top[position]:
                break
            crossover = float(part["spearman"].iloc[position])
        rows.append(
            {
                "tail": tail,
                "method": method,
                "metric": metric,
                "top_points": ", ".join(part.loc[top, "point"]),
                "crossover_spearman": crossover,
            }
        )
    return pd.DataFrame(rows)


def resume_versus_relaunch(table: pd.DataFrame) -> pd.DataFrame:
    """Per method (configured protocol, non-privileged and privileged alike): at how many
    points speculative resume reduces JCT more than relaunch, and by how much on average."""
    rows = []
    mine = table[(table["protocol"] == "configured") & table["jct_resume"].notna()]
    for method, part in mine.groupby("method", sort=False):
        difference = part["jct_resume"] - part["jct_relaunch"]
        separated = part["jct_resume_lo"] > part["jct_relaunch_hi"]
        rows.append(
            {
                "method": method,
                "points": int(len(part)),
                "resume_better": int((difference > 0).sum()),
                "resume_better_intervals_apart": int(separated.sum()),
                "mean_difference": float(difference.mean()),
            }
        )
    return pd.DataFrame(rows)


def sensitivity_markdown(table: pd.DataFrame, leaders: pd.DataFrame, placed: dict) -> str:
    settings = [
        c
        for c in (
            "signature_strength",
            "feature_noise",
            "heavy_tail_job_fraction",
            "heavy_tail_severity",
        )
        if c in table
    ]
    lines = [
        "# Sensitivity: when each method wins",
        "",
        "Grid points `s<i>t<j>`: signal level i (how much the features say) x tail level j "
        "(how heavy the jobs' tails are) of the generator (config `sensitivity`, "
        "docs/sensitivity.md). spearman / auc: the point's measured predictability (out-of-fold "
        "rank correlation and straggler ROC AUC of the boosted regressor on final features, "
        "mean over jobs); tail: median over jobs of max / p90 latency.",
        "",
        "## Who leads where",
        "",
        "Leader: the non-privileged method with the highest mean under the configured protocol; "
        "tied: methods whose paired bootstrap difference to the leader is not significant after "
        "Holm's correction (docs/statistics.md).",
        "",
    ]
    view = leaders[["point", *settings, "spearman", "tail_max_over_p90", "metric", "leader"]]
    view = view.assign(
        leader_mean=leaders["leader_mean"], n_tied=leaders["n_tied"], tied=leaders["tied"]
    )
    lines += _markdown_table(view.rename(columns={"tail_max_over_p90": "tail"}))
    counts = (
        leaders.groupby(["metric", "leader"], sort=False).size().rename("points led").reset_index()
    )
    lines += ["", "Points led per method:", ""] + _markdown_table(counts)
    lines += [
        "",
        "## Crossovers",
        "",
        "Per tail level: where NURD (configured protocol) leads or is tied with the leader, and "
        "the lowest predictability from which it does so at every more predictable point.",
        "",
    ]
    for metric in LEADER_METRICS:
        lines += _markdown_table(crossovers(table, "NURD", metric)) + [""]
    lines += [
        "Speculative resume against relaunch (unlimited machines): at how many points resume "
        "reduces JCT more, with its interval above relaunch's, and the mean difference.",
        "",
    ]
    lines += _markdown_table(resume_versus_relaunch(table))
    lines += [
        "",
        "## Every method at every point",
        "",
        "Mean over scored jobs with its bootstrap interval [lo, hi]; jct_*: mean JCT reduction "
        "with unlimited machines when a flag relaunches the task (relaunch) or starts a copy "
        "that resumes from the last checkpoint (resume). `(paper)` rows: the same method under "
        "`protocol: paper` (no JCT: its aligned timeline is simulated by the audit only). "
        "`*` leads, `=` tied with the leader.",
        "",
    ]

    def cell(row, metric: str) -> str:
        value = getattr(row, metric)
        if value is None or np.isnan(value):
            return "-"
        mark = ""
        if metric in LEADER_METRICS:
            mark = (
                "*"
                if getattr(row, f"leads_{metric}")
                else "="
                if getattr(row, f"tied_{metric}")
                else ""
            )
        lo, hi = getattr(row, f"{metric}_lo", np.nan), getattr(row, f"{metric}_hi", np.nan)
        band = f" [{lo:.2f}, {hi:.2f}]" if not (np.isnan(lo) or np.isnan(hi)) else ""
        return f"{value:.3f}{mark}{band}"

    metrics = ["F1", "early_F1", "jct_relaunch", "jct_resume"]
    header = ["point", "spearman", "tail", "method", *metrics]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in table.itertuples(index=False):
        cells = [row.point, f"{row.spearman:.3f}", f"{row.tail_max_over_p90:.2f}", row.method]
        lines.append("| " + " | ".join(cells + [cell(row, m) for m in metrics]) + " |")
    lines += ["", "## Datasets of the run on the map", ""]
    lines += _markdown_table(
        pd.DataFrame(
            [
                {"dataset": name, "spearman": m["spearman"], "auc": m["auc"], "tail": m["tail"]}
                for name, m in placed.items()
            ]
        )
    )
    lines.append("")
    return "\n".join(lines)


def plot_sensitivity(table: pd.DataFrame, placed: dict, path: str) -> None:
    """Rows: F1, early-F1, JCT reduction (relaunch, resume); columns: tail levels. In each
    panel one line per method over the signal levels at their measured predictability
    (spearman), its interval as a band; each dataset of the run a dotted line at its own."""
    from stragglers.io import pyplot

    plt = pyplot()

    from stragglers.io import save_figure

    metrics = ["F1", "early_F1", "jct_relaunch", "jct_resume"]
    tails = sorted(table["tail"].unique())
    fig, axes = plt.subplots(
        len(metrics), len(tails), figsize=(4.2 * len(tails), 3.0 * len(metrics)), squeeze=False
    )
    methods = list(dict.fromkeys(table["method"]))
    colours = {m: plt.get_cmap("tab20")(i % 20) for i, m in enumerate(methods)}
    for column, tail in enumerate(tails):
        at_tail = table[table["tail"] == tail]
        tail_value = at_tail["tail_max_over_p90"].median()
        for row, metric in enumerate(metrics):
            ax = axes[row][column]
            for method in methods:
                line = at_tail[at_tail["method"] == method].sort_values("spearman")
                if line[metric].isna().all():
                    continue
                style = "--" if method.endswith(PAPER_SUFFIX) else "-"
                ax.plot(
                    line["spearman"],
                    line[metric],
                    style,
                    marker="o",
                    ms=3,
                    color=colours[method],
                    label=method,
                )
                ax.fill_between(
                    line["spearman"],
                    line[f"{metric}_lo"],
                    line[f"{metric}_hi"],
                    color=colours[method],
                    alpha=0.12,
                    linewidth=0,
                )
            for name, measure in placed.items():
                ax.axvline(measure["spearman"], color="grey", linestyle=":", linewidth=1)
                if row == 0:
                    ax.annotate(
                        name,
                        (measure["spearman"], 1.0),
                        xycoords=("data", "axes fraction"),
                        rotation=90,
                        fontsize=6,
                        va="top",
                        ha="right",
                        color="grey",
                    )
            if row == 0:
                ax.set_title(f"tail level {tail} (median max/p90 {tail_value:.2f})", fontsize=9)
            if row == len(metrics) - 1:
                ax.set_xlabel("predictability (out-of-fold Spearman)")
            if column == 0:
                ax.set_ylabel(metric.replace("_", "-"))
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)), fontsize=7)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def read_point_outputs(
    points: dict[str, dict], placed: list[str], inputs: dict[str, str]
) -> tuple[dict, dict, dict, dict]:
    """Each grid point's job metrics (the configured protocol's and the paper's), policy
    summary and measured predictability, and each placed dataset's predictability, from the
    sensitivity_table rule's named inputs (`<part>_<name>`, stragglers.rules.sensitivity)."""
    measured = {
        name: pd.read_json(inputs[f"measure_{name}"], typ="series").to_dict() for name in points
    }
    placed_points = {
        name: pd.read_json(inputs[f"place_{name}"], typ="series").to_dict() for name in placed
    }
    job_metrics = {
        name: pd.concat(
            [
                pd.read_csv(inputs[f"{part}_{name}"], dtype={"job_id": str})
                for part in ("metrics", "paper")
            ],
            ignore_index=True,
        )
        for name in points
    }
    policies = {name: pd.read_csv(inputs[f"policies_{name}"]) for name in points}
    return job_metrics, policies, measured, placed_points


def write_sensitivity(
    points: dict[str, dict],
    placed: list[str],
    inputs: dict[str, str],
    *,
    seed: int,
    bootstrap: dict,
    csv: str,
    leaders: str,
    md: str,
    png: str,
) -> pd.DataFrame:
    """The map (`csv`), who leads where (`leaders`), their Markdown and figure, and the placed
    datasets' measures (sensitivity_placed.json beside `csv`) from every point's outputs
    (`read_point_outputs`); `bootstrap`: the config's settings."""
    from pathlib import Path

    from stragglers.evaluate.bootstrap import bootstrap_settings
    from stragglers.io import dump_json, write_csv_atomic, write_text_atomic

    job_metrics, policies, measured, placed_points = read_point_outputs(points, placed, inputs)
    table, leader_rows = sensitivity_table(
        dict(points),
        job_metrics,
        policies,
        measured,
        seed=int(seed),
        bootstrap=bootstrap_settings(dict(bootstrap)),
    )
    write_csv_atomic(table, csv)
    write_csv_atomic(leader_rows, leaders)
    write_text_atomic(sensitivity_markdown(table, leader_rows, placed_points), md)
    plot_sensitivity(table, placed_points, png)
    dump_json(placed_points, Path(csv).with_name("sensitivity_placed.json"))
    return table
