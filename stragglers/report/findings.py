"""results/findings.md: the run's headline statements, every number filled in from a table.

Each number goes through `Sources.quote`, which formats it and records where it came from
(file, row, column, full value). The list is written beside the page as
`findings.sources.csv`, so a test (tests/test_findings.py) can look every quoted number up in
its table again, and can check that the page quotes no number the list does not hold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

# what the page calls its source tables (the paths the rule passes in end with these names)
SOURCE_COLUMNS = ["number", "file", "row", "column", "value"]
DIGITS = 3
ORACLE = "Oracle"
NURD = "NURD"
NO_MITIGATION_POLICY = "none"


@dataclass
class Sources:
    """The numbers quoted so far and where each comes from."""

    rows: list[dict] = field(default_factory=list)

    def quote(self, table: pd.DataFrame, file: str, keys: dict, column: str) -> str:
        """The value of `column` in the one row of `table` matching `keys`, formatted."""
        match = _matching(table, keys)
        if len(match) != 1:
            raise ValueError(f"{file}: {len(match)} rows match {keys}, expected one")
        value = float(match[column].iloc[0])
        number = format_number(value)
        self.rows.append(
            {
                "number": number,
                "file": file,
                "row": ", ".join(f"{k}={v}" for k, v in keys.items()),
                "column": column,
                "value": repr(value),
            }
        )
        return number

    def interval(self, table: pd.DataFrame, file: str, keys: dict, column: str) -> str:
        """`v [lo, hi]` when the table has the column's interval and it is defined, else `v`."""
        text = self.quote(table, file, keys, column)
        lo, hi = f"{column}_lo", f"{column}_hi"
        if lo in table and hi in table:
            row = _one_row(table, keys)
            if not (pd.isna(row[lo]) or pd.isna(row[hi])):
                text += (
                    f" [{self.quote(table, file, keys, lo)}, {self.quote(table, file, keys, hi)}]"
                )
        return text

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=SOURCE_COLUMNS)


def format_number(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    text = f"{value:.{DIGITS}f}"
    return "0.000" if text == "-0.000" else text


def _matching(table: pd.DataFrame, keys: dict) -> pd.DataFrame:
    """The rows of `table` whose `keys` columns read as the given values."""
    match = table
    for key, value in keys.items():
        match = match[match[key].astype(str) == str(value)]
    return match


def _one_row(table: pd.DataFrame, keys: dict) -> pd.Series:
    return _matching(table, keys).iloc[0]


def _names(methods) -> str:
    methods = list(methods)
    if not methods:
        return "none"
    return ", ".join(methods[:-1]) + (" and " if len(methods) > 1 else "") + methods[-1]


def _tied_with_best(comparisons: pd.DataFrame | None, dataset: str, metric: str) -> list[str]:
    if comparisons is None or not len(comparisons):
        return []
    rows = comparisons[
        (comparisons["dataset"] == dataset)
        & (comparisons["metric"] == metric)
        & (comparisons["reference_kind"] == "best")
    ]
    tied = rows["tied"].astype(str).str.lower() == "true"
    return [m for m in rows.loc[tied, "method"] if m != rows["reference"].iloc[0]]


def _ranking(table3: pd.DataFrame, dataset: str, metric: str) -> pd.DataFrame:
    """The dataset's non-privileged methods with a value of `metric`, best first (ties: Table
    3's order, as the paired comparisons pick the best)."""
    rows = table3[(table3["dataset"] == dataset) & ~table3["privileged"].astype(bool)]
    rows = rows[rows[metric].notna()]
    return rows.sort_values(metric, ascending=False, kind="stable")


def _best_statement(
    sources: Sources,
    table3: pd.DataFrame,
    comparisons: pd.DataFrame | None,
    dataset: str,
    metric: str,
    label: str,
    files: dict[str, str],
) -> list[str]:
    ranking = _ranking(table3, dataset, metric)
    if ranking.empty:
        return [f"- No online method has a {label} on `{dataset}`."]
    best = ranking["method"].iloc[0]
    keys = {"dataset": dataset, "method": best}
    text = (
        f"- Best online method by {label}: **{best}**, "
        f"{sources.interval(table3, files['table3'], keys, metric)}"
    )
    tied = _tied_with_best(comparisons, dataset, metric)
    if comparisons is not None:
        text += (
            f"; statistically tied with it (paired comparisons, Holm): {_names(tied)}"
            if tied
            else "; no other method is statistically tied with it (paired comparisons, Holm)"
        )
    return [text + "."]


def _nurd_statement(
    sources: Sources,
    table3: pd.DataFrame,
    comparisons: pd.DataFrame | None,
    dataset: str,
    files: dict[str, str],
) -> list[str]:
    ranking = _ranking(table3, dataset, "F1")
    if NURD not in set(ranking["method"]):
        return []
    rank = list(ranking["method"]).index(NURD) + 1
    keys = {"dataset": dataset, "method": NURD}
    text = (
        f"- NURD ranks {rank} of {len(ranking)} online methods by F1, with "
        f"{sources.interval(table3, files['table3'], keys, 'F1')}"
    )
    if comparisons is not None and len(comparisons):
        versus = comparisons[
            (comparisons["dataset"] == dataset)
            & (comparisons["metric"] == "F1")
            & (comparisons["reference_kind"] == "best")
            & (comparisons["method"] == NURD)
        ]
        if len(versus) and not pd.isna(versus["diff"].iloc[0]):
            pair = {"dataset": dataset, "metric": "F1", "reference_kind": "best", "method": NURD}
            diff = sources.quote(comparisons, files["paired"], pair, "diff")
            lo = sources.quote(comparisons, files["paired"], pair, "diff_lo")
            hi = sources.quote(comparisons, files["paired"], pair, "diff_hi")
            text += (
                f"; against the best ({versus['reference'].iloc[0]}) its per-job F1 differs "
                f"by {diff} [{lo}, {hi}]"
            )
    return [text + "."]


def _oracle_statement(
    sources: Sources, table3: pd.DataFrame, dataset: str, files: dict[str, str]
) -> list[str]:
    rows = table3[(table3["dataset"] == dataset) & (table3["method"] == ORACLE)]
    if rows.empty:
        return []
    keys = {"dataset": dataset, "method": ORACLE}
    return [
        f"- The Oracle (privileged: it sees every task's latency) scores F1 "
        f"{sources.interval(table3, files['table3'], keys, 'F1')}."
    ]


def _jct_statements(
    sources: Sources,
    completion: pd.DataFrame | None,
    policies: pd.DataFrame | None,
    dataset: str,
    files: dict[str, str],
) -> list[str]:
    lines = []
    for method in (ORACLE, NURD):
        parts = []
        if completion is not None:
            found = completion[
                (completion["dataset"] == dataset) & (completion["method"] == method)
            ]
            if len(found):
                keys = {"dataset": dataset, "method": method}
                parts.append(
                    "kill-and-relaunch (Algorithm 2, unlimited machines) "
                    f"{sources.quote(completion, files['completion'], keys, 'reduction_unlimited')}"
                )
        if policies is not None:
            rows = policies[
                (policies["dataset"] == dataset)
                & (policies["method"] == method)
                & (policies["machines"].astype(str) == "unlimited")
                & (policies["policy"] != NO_MITIGATION_POLICY)
            ]
            for policy in rows["policy"]:
                keys = {
                    "dataset": dataset,
                    "method": method,
                    "policy": policy,
                    "machines": "unlimited",
                }
                reduction = sources.interval(policies, files["policies"], keys, "reduction")
                machine_time = sources.quote(policies, files["policies"], keys, "machine_time_rel")
                parts.append(f"{policy} {reduction} (machine time x {machine_time})")
        if parts:
            lines.append(
                f"- {'The Oracle' if method == ORACLE else method}'s flags change the mean job completion time by (reduction, "
                f"positive = faster): {'; '.join(parts)}."
            )
    return lines


def _audit_statements(
    sources: Sources, audit: pd.DataFrame | None, files: dict[str, str]
) -> list[str]:
    """The largest change of F1 between consecutive steps of the audit's cumulative path."""
    if audit is None or audit.empty or "path" not in audit:
        return []
    ladder = audit[(audit["path"] == "cumulative") & audit["F1"].notna()].copy()
    lines = []
    for (dataset, method), rows in ladder.groupby(["dataset", "method"], sort=False):
        rows = rows.sort_values("step", kind="stable")
        if len(rows) < 2:
            continue
        changes = rows["F1"].diff().iloc[1:]
        where = changes.abs().idxmax()
        after = rows.loc[where]
        before = rows.loc[rows.index[list(rows.index).index(where) - 1]]
        keys_after = {"dataset": dataset, "path": "cumulative", "method": method}
        f1_before = sources.quote(
            audit, files["audit"], {**keys_after, "step": before["step"]}, "F1"
        )
        f1_after = sources.quote(audit, files["audit"], {**keys_after, "step": after["step"]}, "F1")
        lines.append(
            f"- Reproduction audit, `{dataset}`, {method}: the largest step of F1 is step "
            f"{after['step']} ({after['change']}), from {f1_before} to {f1_after}."
        )
    return lines


def _fingerprint_statement(
    sources: Sources, fingerprint: pd.DataFrame | None, dataset: str, files: dict[str, str]
) -> list[str]:
    """Each fingerprint set's distance to the paper's Table 3 (docs/fingerprint.md)."""
    if fingerprint is None:
        return []
    rows = fingerprint[(fingerprint["dataset"] == dataset) & (fingerprint["rows"] > 0)]
    parts = []
    for row in rows.itertuples():
        keys = {"dataset": dataset, "set": row.set}
        distance = sources.quote(fingerprint, files["fingerprint"], keys, "distance")
        parts.append(f"{row.set} {distance} ({row.rows} of {row.of} methods)")
    if not parts:
        return []
    return [
        "- Distance to the paper's Table 3 (the fingerprint: mean over a set's methods of "
        "|TPR - paper TPR| + |FPR - paper FPR|; NURD and NURD-NC are the held-out set): "
        + "; ".join(parts)
        + "."
    ]


def _held_out_statement(
    sources: Sources,
    paper_run: pd.DataFrame | None,
    paper_distances: pd.DataFrame | None,
    dataset: str,
    files: dict[str, str],
) -> list[str]:
    """NURD and NURD-NC replayed under `protocol: paper` (`snakemake fingerprint`) beside the
    paper's Table 3: the held-out test of docs/fingerprint.md, since neither method enters the
    generator's calibration."""
    if paper_run is None:
        return []
    rows = paper_run[paper_run["dataset"] == dataset]
    if rows.empty:
        return []
    file = files["fingerprint_paper"]
    parts = []
    for method in ("NURD", "NURD-NC"):
        keys = {"dataset": dataset, "method": method}
        match = rows[rows["method"] == method]
        if match.empty or match[["TPR", "FPR", "F1"]].isna().any(axis=None):
            continue
        ours = ", ".join(
            f"{metric} {sources.interval(paper_run, file, keys, metric)}"
            for metric in ("TPR", "FPR", "F1")
        )
        paper = ", ".join(
            f"{metric} {sources.quote(paper_run, file, keys, f'paper_{metric}')}"
            for metric in ("TPR", "FPR", "F1")
        )
        parts.append(f"{method} {ours} (paper: {paper})")
    if not parts:
        return []
    text = (
        "- Held-out test (every method with a paper row replayed under `protocol: paper`, "
        "`snakemake fingerprint`; NURD and NURD-NC never enter the generator's calibration): "
        + "; ".join(parts)
        + "."
    )
    if paper_distances is not None:
        sets = paper_distances[
            (paper_distances["dataset"] == dataset) & (paper_distances["rows"] > 0)
        ]
        quoted = [
            f"{row.set} "
            + sources.quote(
                paper_distances,
                files["fingerprint_paper_distances"],
                {"dataset": dataset, "set": row.set},
                "distance",
            )
            for row in sets.itertuples()
        ]
        if quoted:
            text += (
                " Distance to the paper's Table 3 under that protocol: " + "; ".join(quoted) + "."
            )
    return [text]


FEW_JOBS = 10  # below this many jobs, the real-jobs table says what its intervals are


def _quote_present(
    sources: Sources, table: pd.DataFrame, file: str, keys: dict, column: str, interval: bool
) -> str:
    """The quoted value (with its interval), or empty where the table has no row or no number
    for it."""
    match = _matching(table, keys)
    if column not in table or len(match) != 1 or pd.isna(match[column].iloc[0]):
        return ""
    return (sources.interval if interval else sources.quote)(table, file, keys, column)


def _real_jobs_table(
    sources: Sources,
    table3: pd.DataFrame,
    paper_run: pd.DataFrame | None,
    dataset: str,
    generated: list[str],
    protocol: str,
    files: dict[str, str],
) -> list[str]:
    """Every method on a real dataset: under `protocol: paper` (the fingerprint's replay) beside
    the paper's Table 3 row, then under the run's protocol beside its F1 on each generated
    dataset. Non-privileged methods first, each group by F1 under the run's protocol."""
    rows = table3[table3["dataset"] == dataset]
    if rows.empty:
        return []
    rows = rows.assign(_privileged=rows["privileged"].astype(bool)).sort_values(
        ["_privileged", "F1"], ascending=[True, False], kind="stable"
    )
    paper_rows = paper_run[paper_run["dataset"] == dataset] if paper_run is not None else None
    has_paper_run = paper_rows is not None and len(paper_rows) > 0
    header = ["method"]
    if has_paper_run:
        header += ["TPR (paper protocol)", "FPR (paper protocol)", "F1 (paper protocol)"]
    header += ["paper's TPR", "paper's FPR", "paper's F1", f"F1 ({protocol})"]
    header += [f"F1 on {name} ({protocol})" for name in generated]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for method, privileged in zip(rows["method"], rows["_privileged"]):
        keys = {"dataset": dataset, "method": method}
        cells = [f"{method}{' (privileged)' if privileged else ''}"]
        if has_paper_run:
            cells += [
                _quote_present(sources, paper_run, files["fingerprint_paper"], keys, metric, True)
                for metric in ("TPR", "FPR", "F1")
            ]
        cells += [
            _quote_present(sources, table3, files["table3"], keys, f"paper_{metric}", False)
            for metric in ("TPR", "FPR", "F1")
        ]
        cells.append(_quote_present(sources, table3, files["table3"], keys, "F1", True))
        for name in generated:
            other = {"dataset": name, "method": method}
            cells.append(_quote_present(sources, table3, files["table3"], other, "F1", False))
        lines.append("| " + " | ".join(cells) + " |")
    n_jobs = int(rows["jobs_evaluated"].max()) if "jobs_evaluated" in rows else 0
    few = (
        " With this few jobs the interval is about the range of the per-job values: it shows "
        "how much the jobs disagree, not how a larger sample of jobs would score."
        if 0 < n_jobs < FEW_JOBS
        else ""
    )
    return [
        f"Every online method on the real jobs of `{dataset}` ({n_jobs} jobs evaluated): means "
        f"over jobs, with the bootstrap interval over jobs in brackets.{few} The paper's "
        "columns are its Table 3 row for the same trace; the last columns give the same "
        "method's F1 on the generated datasets; empty: no number.",
        "",
        *lines,
    ]


def _real_distance_statement(
    sources: Sources, real: pd.DataFrame | None, dataset: str, files: dict[str, str]
) -> list[str]:
    """How far a generated dataset's baselines sit from a real dataset's, both under
    `protocol: paper` (results/fingerprint/real_distances.csv)."""
    if real is None:
        return []
    lines = []
    file = files["real_distances"]
    for reference, rows in real[real["dataset"] == dataset].groupby("reference", sort=False):
        parts = []
        for row in rows[rows["rows"] > 0].itertuples():
            keys = {"dataset": dataset, "reference": reference, "set": row.set}
            parts.append(
                f"{row.set} {sources.quote(real, file, keys, 'distance')} (each real job left "
                f"out: {sources.quote(real, file, keys, 'loo_min')} to "
                f"{sources.quote(real, file, keys, 'loo_max')})"
            )
        if parts:
            lines.append(
                f"- Distance to the real jobs of `{reference}` (the same fingerprint with their "
                "rows in place of the paper's, both under `protocol: paper`): "
                + "; ".join(parts)
                + "."
            )
    return lines


def findings_markdown(
    *,
    table3: pd.DataFrame,
    comparisons: pd.DataFrame | None,
    completion: pd.DataFrame | None,
    policies: pd.DataFrame | None,
    audit: pd.DataFrame | None,
    datasets: list[str],
    files: dict[str, str],
    protocol: str,
    config_name: str,
    fingerprint: pd.DataFrame | None = None,
    fingerprint_paper: pd.DataFrame | None = None,
    fingerprint_paper_distances: pd.DataFrame | None = None,
    real_datasets: list[str] = (),
    real_distances: pd.DataFrame | None = None,
) -> tuple[str, pd.DataFrame]:
    """The page and its sources (one row per quoted number). `real_datasets` (datasets read
    from real traces) come first, each with its table of every method."""
    sources = Sources()
    has_early = "early_F1" in table3
    lines = [
        "# Findings of this run",
        "",
        f"Written by the `findings` rule from `{config_name}` (replay protocol `{protocol}`). "
        "Every number below is read from the table named in `findings.sources.csv` (file, row, "
        "column); intervals are the tables' bootstrap intervals over jobs. F1 and early-F1 are "
        "means over jobs; a JCT reduction of 0.1 means jobs finish 10 % sooner. What the numbers "
        "mean: docs/findings.md.",
    ]
    real = [d for d in datasets if d in set(real_datasets)]
    generated = [d for d in datasets if d not in set(real)]
    for dataset in [*real, *generated]:
        lines += ["", f"## {dataset}{' (real jobs)' if dataset in real else ''}", ""]
        lines += _best_statement(sources, table3, comparisons, dataset, "F1", "F1", files)
        if has_early:
            lines += _best_statement(
                sources, table3, comparisons, dataset, "early_F1", "early-F1", files
            )
        lines += _nurd_statement(sources, table3, comparisons, dataset, files)
        lines += _oracle_statement(sources, table3, dataset, files)
        lines += _jct_statements(sources, completion, policies, dataset, files)
        lines += _fingerprint_statement(sources, fingerprint, dataset, files)
        lines += _held_out_statement(
            sources, fingerprint_paper, fingerprint_paper_distances, dataset, files
        )
        lines += _real_distance_statement(sources, real_distances, dataset, files)
        if dataset in real:
            table = _real_jobs_table(
                sources, table3, fingerprint_paper, dataset, generated, protocol, files
            )
            lines += ["", *table] if table else []
    audit_lines = _audit_statements(sources, audit, files)
    if audit_lines:
        lines += ["", "## Reproduction audit (paper's protocol to ours)", "", *audit_lines]
    return "\n".join(lines) + "\n", sources.frame()


def _read(path: str | None) -> pd.DataFrame | None:
    if not path or not Path(path).exists():
        return None
    return pd.read_csv(path, dtype={"machines": str, "job_id": str})


def write_findings(
    *,
    table3: str,
    paired: str | None,
    completion: str | None,
    policies: str | None,
    audit: str | None,
    datasets: list[str],
    protocol: str,
    config_name: str,
    out_md: str,
    out_sources: str,
    fingerprint: str | None = None,
    fingerprint_paper: str | None = None,
    fingerprint_paper_distances: str | None = None,
    real_datasets: list[str] = (),
    real_distances: str | None = None,
) -> pd.DataFrame:
    """Read the tables, write the page and its sources; returns the sources."""
    from stragglers.io import write_csv_atomic, write_text_atomic

    files = {
        "table3": table3,
        "paired": paired or "",
        "completion": completion or "",
        "policies": policies or "",
        "audit": audit or "",
        "fingerprint": fingerprint or "",
        "fingerprint_paper": fingerprint_paper or "",
        "fingerprint_paper_distances": fingerprint_paper_distances or "",
        "real_distances": real_distances or "",
    }
    text, sources = findings_markdown(
        table3=pd.read_csv(table3),
        comparisons=_read(paired),
        completion=_read(completion),
        policies=_read(policies),
        audit=_read(audit),
        datasets=datasets,
        files=files,
        protocol=protocol,
        config_name=config_name,
        fingerprint=_read(fingerprint),
        fingerprint_paper=_read(fingerprint_paper),
        fingerprint_paper_distances=_read(fingerprint_paper_distances),
        real_datasets=list(real_datasets),
        real_distances=_read(real_distances),
    )
    write_text_atomic(text, out_md)
    write_csv_atomic(sources, out_sources)
    return sources


NUMBER = rf"-?\d+\.\d{{{DIGITS}}}\b"


def verify_findings(page: str, sources: pd.DataFrame) -> list[str]:
    """What is wrong with a findings page: a quoted number whose table (read again) holds
    another value, or a number on the page that no source row accounts for."""
    import re

    problems = []
    tables: dict[str, pd.DataFrame] = {}
    for row in sources.itertuples():
        if row.file not in tables:
            tables[row.file] = pd.read_csv(row.file, dtype={"machines": str, "job_id": str})
        keys = dict(part.split("=", 1) for part in row.row.split(", "))
        match = tables[row.file]
        for key, value in keys.items():
            match = match[match[key].astype(str) == value]
        if len(match) != 1:
            problems.append(f"{row.file}: {len(match)} rows match {row.row}")
            continue
        actual = format_number(float(match[row.column].iloc[0]))
        if actual != str(row.number):
            problems.append(
                f"{row.file} [{row.row}] {row.column} is {actual}, the page says {row.number}"
            )
    quoted = {str(n) for n in sources["number"]}
    for number in re.findall(NUMBER, page):
        if number not in quoted:
            problems.append(f"the page quotes {number}, which no source row holds")
    return problems
