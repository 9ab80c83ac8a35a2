"""Alibaba 2018 (and 2017) batch_instance -> one Parquet file per job: an Alibaba task
(job_name, task_name) is a job here, each Terminated instance one window [start, end] with
its lifetime cpu/mem summaries; machine state from machine_usage / machine_meta.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from stragglers.convert import machines
from stragglers.convert.common import (
    ALIBABA_FEATURES,
    ALIBABA_LAYOUTS,
    MACHINE_STATE_FILE,
    REPORT_FILE,
    AlibabaLayout,
    ConversionReport,
    ShardSpill,
    _AtomicFolder,
    _safe_name,
    _write_report,
    stable_shard,
)
from stragglers.formats import raw as schema
from stragglers.traces.rawcsv import RawTraceError, iter_csv_chunks

# the 2018 machine tables (optional: without them the machine's utilisation and size are NaN)
ALIBABA_MACHINE_LAYOUTS = {
    "machine_meta": AlibabaLayout(
        schema.ALIBABA_2018_MACHINE_META,
        ("", ""),
        None,
        "machine_meta.tar.gz",
        "machine_meta.csv",
        ("time_stamp", "cpu_num", "mem_size"),
    ),
    "machine_usage": AlibabaLayout(
        schema.ALIBABA_2018_MACHINE_USAGE,
        ("", ""),
        None,
        "machine_usage.tar.gz",
        "machine_usage.csv",
        ("time_stamp", *machines.ALIBABA_USAGE_COLUMNS),
    ),
}


def alibaba_table_present(raw_dir: Path, layout: AlibabaLayout) -> bool:
    return any(
        (Path(raw_dir) / name).exists()
        for name in (layout.member + ".gz", layout.member, layout.archive)
    )


def alibaba_chunks(raw_dir: Path, layout: AlibabaLayout, report: ConversionReport):
    """Chunks of an Alibaba table: a plain or gzip CSV if present, else the tarball read as
    a stream (never extracted to disk)."""
    for name in (layout.member + ".gz", layout.member):
        if (raw_dir / name).exists():
            report.files_read.append(str(raw_dir / name))
            yield from iter_csv_chunks(
                raw_dir / name,
                layout.columns,
                {c: "float" for c in layout.numeric},
                skipped=report.skipped_rows,
            )
            return
    archive = raw_dir / layout.archive
    if not archive.exists():
        raise RawTraceError(f"no {layout.member}[.gz] or {layout.archive} in {raw_dir}")
    from stragglers.traces.tarstream import iter_tar_csv

    report.files_read.append(f"{archive}:{layout.member}")
    for chunk in iter_tar_csv(archive, layout.member, layout.columns, dtype=str):
        for column in layout.numeric:
            text = chunk[column]
            values = pd.to_numeric(text.replace("", np.nan), errors="coerce")
            # an empty field is missing, not bad; read as text it may arrive as NaN or "nan"
            empty = text.isna() | text.astype(str).str.strip().str.lower().isin(["", "nan"])
            bad = values.isna() & ~empty
            report.skipped_rows.add(
                archive, None, f"{column}: not a number", "unparsable value", n=int(bad.sum())
            )
            # a new frame per column: assigning into a filtered slice would write to a copy
            chunk = chunk.assign(**{column: values})[~bad.to_numpy()]
        yield chunk


def _add_instances_to_machine_state(
    state: machines.BinnedMachineState, chunk: pd.DataFrame, report
) -> None:
    """Every instance with a start (any status, any job) counts on its machine."""
    number = machines.alibaba_machine_number(chunk["machine_id"].to_numpy())
    started = chunk["start_time"].notna().to_numpy()
    placed = started & ~np.isnan(number)
    report.count("instances_started_without_machine", int((started & np.isnan(number)).sum()))
    if placed.any():
        state.add_instances(
            number[placed],
            chunk["start_time"].to_numpy(float)[placed],
            chunk["end_time"].to_numpy(float)[placed],
            (chunk["status"].astype(str) == "Failed").to_numpy()[placed],
        )


def _read_machine_tables(
    raw_dir: Path, state: machines.BinnedMachineState, report: ConversionReport
) -> None:
    """machine_usage (streamed) and machine_meta into the machine state; a missing table is
    counted, its columns stay NaN."""
    for table, layout in ALIBABA_MACHINE_LAYOUTS.items():
        if not alibaba_table_present(raw_dir, layout):
            report.count(f"{table}_table_missing")
            continue
        meta = []
        for chunk in alibaba_chunks(raw_dir, layout, report):
            report.count(f"{table}_rows_read", len(chunk))
            number = machines.alibaba_machine_number(chunk["machine_id"].to_numpy())
            time_s = chunk["time_stamp"].to_numpy(float)
            good = ~np.isnan(number) & ~np.isnan(time_s)
            report.count(f"{table}_rows_without_machine_or_time", int((~good).sum()))
            if table == "machine_usage":
                values = chunk[list(machines.ALIBABA_USAGE_COLUMNS)].to_numpy(float)
                state.add_usage(number[good], time_s[good], values[good])
            else:
                meta.append(
                    (
                        number[good],
                        time_s[good],
                        chunk[["cpu_num", "mem_size"]].to_numpy(float)[good],
                    )
                )
        if table == "machine_meta" and meta:
            state.set_meta(*(np.concatenate(parts) for parts in zip(*meta)))


def spill_alibaba(
    raw_dir: Path | str,
    spill_dir: Path | str,
    *,
    dataset: str,
    n_shards: int,
    kind: str = "alibaba-2018",
    bin_seconds: float = 60.0,
) -> dict[str, Any]:
    """Stage 2 (Alibaba): one streaming pass over the batch_instance table (one "part": the
    CSV or the tarball) keeping Terminated instances with end > start, spilled to one Parquet
    file per shard (a hash of the job id). Alibaba 2018: every instance also counts in its
    machine's state, with machine_usage and machine_meta (`machines.BinnedMachineState` on
    a grid of `bin_seconds`, saved to `machine_state.npz`)."""
    raw_dir = Path(raw_dir)
    layout = ALIBABA_LAYOUTS[kind]
    report = ConversionReport(dataset)
    job_column, task_column = layout.job_columns
    state = machines.BinnedMachineState(bin_seconds) if kind == "alibaba-2018" else None
    with _AtomicFolder(spill_dir) as staging:
        spill = ShardSpill(staging / "shards")
        for chunk in alibaba_chunks(raw_dir, layout, report):
            report.count("instance_rows_read", len(chunk))
            if state is not None:
                _add_instances_to_machine_state(state, chunk, report)
            terminated = chunk["status"].astype(str) == "Terminated"
            report.count("instances_not_terminated", int((~terminated).sum()))
            chunk = chunk[terminated]
            timed = chunk["start_time"].notna() & chunk["end_time"].notna()
            positive = timed & (chunk["end_time"] > chunk["start_time"])
            report.count("instances_zero_or_missing_duration", int((~positive).sum()))
            chunk = chunk[positive]
            if chunk.empty:
                continue
            job_id = chunk[job_column].astype(str) + "." + chunk[task_column].astype(str)
            instance = (
                chunk[layout.instance_column].astype(str)
                if layout.instance_column
                else pd.Series("instance", index=chunk.index)
            )
            seq = chunk["seq_no"].astype("Int64").astype(str)
            piece = pd.DataFrame(
                {
                    "job_id": job_id.to_numpy(),
                    "task_id": (instance + "#" + seq).to_numpy(),
                    "start": chunk["start_time"].to_numpy(float),
                    "end": chunk["end_time"].to_numpy(float),
                    "machine_id": chunk["machine_id"].astype(str).to_numpy(),
                    **{f: chunk[f].to_numpy(float) for f in ALIBABA_FEATURES},
                    # workload attributes (2018): the trace's task type and the task name
                    "task_type": (
                        chunk["task_type"].astype(str).to_numpy()
                        if "task_type" in chunk
                        else np.full(len(chunk), "")
                    ),
                    "task_name": chunk[task_column].astype(str).to_numpy(),
                }
            )
            piece["shard"] = stable_shard(piece["job_id"], n_shards)
            for shard, rows in piece.groupby("shard"):
                spill.write(
                    int(shard),
                    pa.Table.from_pandas(rows.drop(columns="shard"), preserve_index=False),
                )
        spill.close()
        report.phase("instances")
        if state is not None:
            _read_machine_tables(raw_dir, state, report)
            state.finish()
            state.save(staging / MACHINE_STATE_FILE)
            report.phase("machine_tables")
        _write_report(staging / REPORT_FILE, report)
    return report.as_dict()


def task_family(task_name: str) -> str:
    """The DAG role of an Alibaba 2018 task name: its leading letters (M1 -> "M", R2_1 ->
    "R", J3_2 -> "J"; an independent task_xxx -> "task")."""
    match = re.match(r"[A-Za-z]+", task_name)
    return match.group(0) if match else ""


def _write_alibaba_shard(
    table: pa.Table | None,
    shard: int,
    jobs_dir: Path,
    relative: str,
    min_tasks: int,
    dataset: str,
    report: ConversionReport,
    state: machines.BinnedMachineState | None = None,
) -> list[dict[str, Any]]:
    """One shard's instances -> one Parquet file per Alibaba task with >= `min_tasks` of them;
    with `state`, each instance's machine state at its start (window and launch columns)."""
    if table is None:
        return []
    rows = []
    instances = table.to_pandas()
    sizes = instances.groupby("job_id").size()
    report.count("alibaba_tasks_seen", len(sizes))
    report.count("jobs_dropped_below_min_tasks", int((sizes < min_tasks).sum()))
    instances = instances[instances["job_id"].isin(sizes[sizes >= min_tasks].index)]
    for job_id, inst in instances.groupby("job_id", sort=True):
        inst = inst.sort_values(["start", "task_id"], kind="stable")
        start, end = inst["start"].to_numpy(), inst["end"].to_numpy()
        frame = pd.DataFrame(
            {
                "task": np.arange(len(inst), dtype=np.int32),
                "window_start": start,
                "window_end": end,
                # lifetime summaries are all the trace has: visible from the start (a leak
                # the trace imposes, documented in docs/deviations.md)
                "available_from": start,
                **{f: inst[f].to_numpy(float) for f in ALIBABA_FEATURES},
                "task_id": inst["task_id"].to_numpy(),
                "task_start": start,
                "task_end": end,
                "latency": end - start,
                "machine_id": inst["machine_id"].to_numpy(),
                "evictions": np.zeros(len(inst), dtype=np.int32),
                "failures": np.zeros(len(inst), dtype=np.int32),
            }
        )
        if state is not None:
            # the one window is available from the start: its state and the launch state are
            # the machine's at the last grid boundary at or before the start
            values = state.state(
                machines.alibaba_machine_number(inst["machine_id"].to_numpy()), start
            )
            report.count("instances_machine_unknown", int(np.isnan(values[:, 0]).sum()))
            columns = machines.ALIBABA_MACHINE_STATE_COLUMNS
            for column, launch, value in zip(columns, machines.launch_columns(columns), values.T):
                frame[column] = value
                frame[launch] = value
        name = f"{_safe_name(job_id)}.parquet"
        frame.to_parquet(jobs_dir / name, index=False)
        rows.append(
            {
                "dataset": dataset,
                "job_id": str(job_id),
                "n_tasks": len(frame),
                "n_windows": len(frame),
                "shard": int(shard),
                "path": f"{relative}/{name}",
                "job_start": float(start.min()),
                "job_end": float(end.max()),
                "workload_task_type": str(inst["task_type"].iloc[0]),
                "workload_task_family": task_family(str(inst["task_name"].iloc[0])),
            }
        )
    return rows
