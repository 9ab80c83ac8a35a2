"""The real task_events part 0 of clusterdata-2011-2 in ../shared: verified against the official
SHA-256, converted as the events-only dataset, and its job and task counts checked against an
independent computation written differently (per-task Python records, not vectorised)."""

from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from stragglers.convert.one_process import convert_google_events
from stragglers.formats import raw as schema
from stragglers.formats.datasets import feature_columns
from stragglers.formats.jobs import read_job

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "google-2011"
PART = SHARED / "task_events" / "part-00000-of-00500.csv.gz"

pytestmark = pytest.mark.skipif(
    not PART.exists(), reason=f"real trace rows not available ({PART} is absent)"
)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    out = tmp_path_factory.mktemp("real") / "converted"
    summary = convert_google_events(
        SHARED, out, dataset="real", n_shards=2, priorities=tuple(range(12)), window_seconds=60.0
    )
    return out, summary


def independent_counts(min_tasks=100):
    """Walk the events task by task: keep tasks whose last event is FINISH, drop jobs with a
    task still pending/running at the end of the part or first scheduled before 600 s."""
    events = pd.read_csv(
        PART,
        header=None,
        names=schema.GOOGLE_TASK_EVENTS,
        usecols=["timestamp", "job_id", "task_index", "event_type"],
    )
    history = defaultdict(list)
    for t, job, task, kind in events.itertuples(index=False):
        history[(job, task)].append((t, kind))
    finished = defaultdict(int)
    bad_jobs = set()
    for (job, _task), rows in history.items():
        rows.sort(key=lambda r: r[0])  # stable: same-time events keep file order
        last_kind = rows[-1][1]
        schedules = [t for t, k in rows if k == 1]
        if last_kind == 4 and schedules:
            if min(schedules) < 600_000_000:
                bad_jobs.add(job)
            elif rows[-1][0] > min(schedules):
                finished[job] += 1
        elif last_kind not in (4, 5, 6):
            bad_jobs.add(job)
    kept = {job: n for job, n in finished.items() if job not in bad_jobs and n >= min_tasks}
    return kept


def test_official_checksum_verifies():
    from stragglers.traces.download import check_local_copy

    # the listing read by hand (not by the parser under test): every file it names, each of
    # which must hash to its listed value
    listed = sorted(
        line.split()[1].lstrip("*")
        for line in (SHARED / "SHA256SUM").read_text().splitlines()
        if line.strip()
    )
    assert "task_events/part-00000-of-00500.csv.gz" in listed
    assert "machine_events/part-00000-of-00001.csv.gz" in listed
    assert sorted(check_local_copy(SHARED, SHARED / "SHA256SUM")) == listed


def test_job_and_task_counts_match_an_independent_computation(converted):
    out, summary = converted
    manifest = pd.read_parquet(out / "manifest.parquet")
    expected = independent_counts()
    assert len(manifest) == len(expected) > 10
    assert dict(zip(manifest["job_id"].astype(int), manifest["n_tasks"])) == expected
    assert summary["counts"]["jobs_kept"] == len(expected)
    assert summary["skipped_rows"]["count"] == 0


def test_real_jobs_have_sane_windows(converted):
    out, _ = converted
    manifest = pd.read_parquet(out / "manifest.parquet")
    row = manifest.iloc[0]
    job = read_job(out / row["path"], row["job_id"], feature_columns("google-2011-events"))
    assert np.all(job.latency > 0)
    assert np.all(job.window_end > job.window_start)
    assert np.all(
        (job.window_start >= job.task_start[job.window_task] - 1e-6)
        & (job.window_end <= job.task_end[job.window_task] + 1e-6)
    )
    load = job.window_features[:, job.feature_names.index("machine_load")]
    assert load.min() >= 1  # the task itself runs on its machine
