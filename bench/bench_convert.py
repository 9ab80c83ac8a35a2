"""Conversion of one real-size Google task_usage part against `gzip -dc part > /dev/null` on
the same file, in the same run (a benchmark, not a test). From the repository root:

    python bench/bench_convert.py [--jobs 1800] [--min-tasks 100] [--keep DIR] [--out FILE]

A real clusterdata-2011-2 task_usage part is ~90 MB of gzip and ~2.5 million rows; the part
generated here has the same schema and about as many rows (--jobs sets the size). Nearly all
of its jobs pass the workflow's selection (at least 100 tasks, production priority): it keeps
914 jobs and 81% of its rows, the worst case for memory and time. The full Google selection
keeps 8,425 jobs of 500 parts, about 17 jobs a part. `--min-tasks` raises the selection's
threshold: the conversion reads the same rows and keeps fewer jobs (385: 20 jobs, about 3% of
the rows), which is what a part of the real trace costs (bench/project_cost.py's conversion
rate for Google). Each measurement runs in a fresh process so its peak memory (max RSS) and
CPU time are its own:

- `convert_part_*`: the workflow's per-part job (rule convert_part: read the prepared tasks,
  stream the part, spill its windows per shard), the number the ratio to `gzip -dc` is about;
- `prepare_*` (once per dataset: every task_events part) and `gather_*` (every shard, i.e.
  what all gather_shard jobs do together for this part's windows);
- `single_process_*`: the whole conversion in one process, as `convert_google` runs it.

Prints JSON and writes it to --out (default bench/out/convert.json). Then checks the per-part job against what rule
convert_part requests in workflow/rules/data.smk (the measured part is real-size; prepare and
gather here see one part's jobs only, not the full trace's): it exits non-zero, naming the
rule, if the measured peak RSS exceeds the rule's `mem_mb` or its CPU time its `runtime`, or
the request leaves less than the headroom rule of bench/suggest_resources.py (1.5x memory,
3x CPU time), and prints what that rule would request.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the paper's Google selection (bench/project_cost.py's full run)
FULL_SELECTION_TASKS = 1_100_000
FULL_SELECTION_JOBS = 8425


def _cpu(usage) -> float:
    return usage.ru_utime + usage.ru_stime


def lookup_extra_cpu_seconds(rows: int, tasks_kept: int, jobs_kept: int, seed: int) -> float:
    """What the per-part job's two binary searches per usage row (the row's task among the
    kept tasks, its job among the kept jobs: `spill_google_usage`) cost more against the full
    selection's sorted keys than against this part's few: CPU seconds of `rows` searches in
    tables of the full selection's sizes less the same in tables of this run's sizes. The
    keys are random: a part's rows come in time order, not in key order."""
    import numpy as np

    rng = np.random.default_rng(seed)
    wanted = rng.integers(0, 1 << 62, rows, dtype=np.int64)

    def searches(n_tasks: int, n_jobs: int) -> float:
        tables = [
            np.sort(rng.integers(0, 1 << 62, max(n, 1), dtype=np.int64)) for n in (n_tasks, n_jobs)
        ]
        began = time.process_time()
        for table in tables:
            position = np.minimum(np.searchsorted(table, wanted), len(table) - 1)
            _ = table[position] == wanted
        return time.process_time() - began

    full = min(searches(FULL_SELECTION_TASKS, FULL_SELECTION_JOBS) for _ in range(3))
    here = min(searches(tasks_kept, jobs_kept) for _ in range(3))
    return max(full - here, 0.0)


def run_measured(arguments: list[str]) -> dict:
    """Run Python with `arguments` (["-c", code], or a script and its arguments) in a fresh
    process: wall seconds, CPU seconds (all its threads), peak RSS (through /usr/bin/time-like
    wait4 accounting of that one child) and what it printed."""
    began = time.perf_counter()
    process = subprocess.Popen([sys.executable, *arguments], stdout=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - began
    stdout = process.stdout.read()
    process.stdout.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"benchmark step failed: {' '.join(arguments)}")
    return {
        "seconds": round(seconds, 2),
        "cpu_seconds": round(_cpu(usage), 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024.0),
        "stdout": stdout,
    }


def declared_resources(rule: str, rules_file: Path = ROOT / "workflow" / "rules" / "data.smk"):
    """The `resources:` of `rule` (name -> int) as written in its rule file."""
    text = rules_file.read_text()
    block = re.search(rf"^rule {rule}:\n(.*?)(?=^\S|\Z)", text, flags=re.M | re.S)
    if block is None:
        raise SystemExit(f"bench_convert: no rule {rule} in {rules_file}")
    resources = re.search(r"^    resources:\n((?:        \w+=\d+,\n)+)", block.group(1), flags=re.M)
    if resources is None:
        raise SystemExit(f"bench_convert: rule {rule} declares no resources in {rules_file}")
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", resources.group(1))}


def check_request(rule: str, peak_rss_mb: float, cpu_seconds: float) -> list[str]:
    """What is wrong with `rule`'s request for a measured job (empty: it is covered)."""
    sys.path.insert(0, str(ROOT / "bench"))
    from suggest_resources import round_up

    declared = declared_resources(rule)
    suggested = {
        "mem_mb": max(512, round_up(1.5 * peak_rss_mb, 256)),
        "runtime": max(5, math.ceil(3 * cpu_seconds / 60)),
    }
    print(
        f"rule {rule}: requests {declared}; measured {peak_rss_mb} MB, {cpu_seconds} CPU s; "
        f"the headroom rule gives {suggested}"
    )
    problems = []
    mem_mb, runtime = declared.get("mem_mb", 0), declared.get("runtime", 0)
    if peak_rss_mb > mem_mb:
        problems.append(
            f"rule {rule}: measured peak RSS {peak_rss_mb} MB exceeds its mem_mb={mem_mb}"
        )
    elif 1.5 * peak_rss_mb > mem_mb:
        problems.append(
            f"rule {rule}: mem_mb={mem_mb} leaves less than the 1.5x headroom over the measured "
            f"peak RSS {peak_rss_mb} MB"
        )
    if 3 * cpu_seconds / 60 > runtime:
        problems.append(
            f"rule {rule}: runtime={runtime} min is less than 3x the measured {cpu_seconds} CPU s"
        )
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1800)
    parser.add_argument("--seed", type=int, default=20220301)
    parser.add_argument(
        "--min-tasks",
        type=int,
        default=100,
        help="the selection's smallest job (default: the workflow's 100 tasks); a larger one "
        "reads the same rows and keeps fewer of them",
    )
    parser.add_argument(
        "--keep", type=Path, default=None, help="reuse/keep the generated trace here"
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / "bench" / "out" / "convert.json", help="the JSON"
    )
    args = parser.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-convert-"))
    raw = work / "raw"
    if not (raw / "task_usage").exists():
        from stragglers.traces.generate import GoogleGeneratorConfig, generate_google

        # the generator writes at least two parts (balanced by rows); keep the first usage part
        # only, with all task_events: one real-size part, converted with its jobs' events
        generate_google(
            raw,
            GoogleGeneratorConfig.from_dict({"n_jobs": args.jobs, "seed": args.seed, "n_parts": 2}),
        )
        for extra in sorted((raw / "task_usage").glob("part-*.csv.gz"))[1:]:
            extra.unlink()
    usage_part = next((raw / "task_usage").glob("part-*.csv.gz"))
    with gzip.open(usage_part, "rb") as handle:
        rows = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 24), b""))

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run(f"gzip -dc {usage_part} > /dev/null", shell=True, check=True)
    gzip_seconds = time.perf_counter() - began
    gzip_cpu = _cpu(resource.getrusage(resource.RUSAGE_CHILDREN)) - _cpu(before)

    out = work / "converted"
    code = (
        "import json, sys; from stragglers.convert.one_process import convert_google; "
        f"s = convert_google({str(raw)!r}, {str(out)!r}, dataset='bench', n_shards=8, min_tasks={args.min_tasks}); "
        "print(json.dumps({**s['counts'], 'phases': s['seconds']}))"
    )
    single = run_measured(["-c", code])
    counts = json.loads(single.pop("stdout").strip().splitlines()[-1])

    # the scattered stages, each as its Snakemake job runs it
    stages = work / "stages"
    shutil.rmtree(stages, ignore_errors=True)
    events = sorted(str(p.relative_to(raw)) for p in (raw / "task_events").glob("part-*.csv.gz"))
    machine_events = sorted(
        str(p.relative_to(raw)) for p in (raw / "machine_events").glob("part-*.csv.gz")
    )
    common = f"dataset='bench', min_tasks={args.min_tasks}"
    prepare = run_measured(
        [
            "-c",
            "from stragglers.convert import layout; "
            f"layout.prepare(raw_dir={str(raw)!r}, event_parts={events!r}, out_dir={str(stages / 'prepared')!r}, "
            f"n_shards=8, priorities=[9, 10, 11], machine_event_parts={machine_events!r}, {common})",
        ]
    )
    part = run_measured(
        [
            "-c",
            "from stragglers.convert import layout; "
            f"layout.convert_part(kind='google-2011', raw_dir={str(raw)!r}, "
            f"parts=[{str(usage_part.relative_to(raw))!r}], out_dir={str(stages / 'spill' / 'group-0')!r}, "
            f"out_report={str(stages / 'group-0.json')!r}, n_shards=8, priorities=[9, 10, 11], grid={{}}, "
            f"prepared_dir={str(stages / 'prepared')!r}, {common})",
        ]
    )
    gather = run_measured(
        [
            "-c",
            "from stragglers.convert import layout\n"
            "for shard in range(8):\n"
            f"    layout.gather(kind='google-2011', spill_dirs=[{str(stages / 'spill' / 'group-0')!r}], shard=shard, "
            f"jobs_dir={str(stages / 'jobs')!r} + f'/shard-{{shard}}', out_manifest={str(stages)!r} + f'/shard-{{shard}}.parquet', "
            f"out_report={str(stages)!r} + f'/shard-{{shard}}.json', latency_definition='schedule_to_finish', "
            f"prepared_dir={str(stages / 'prepared')!r}, {common})",
        ]
    )
    events_bytes = sum(p.stat().st_size for p in (raw / "task_events").glob("*.gz"))
    raw_gb = (usage_part.stat().st_size + events_bytes) / 1e9
    lookup_extra = lookup_extra_cpu_seconds(
        rows, counts.get("tasks_kept", 0), counts.get("jobs_kept", 0), args.seed
    )
    result = {
        "benchmark": "convert one real-size task_usage part vs gzip -dc",
        "usage_part_mb": round(usage_part.stat().st_size / 1e6, 1),
        "usage_rows": rows,
        "task_events_mb": round(events_bytes / 1e6, 1),
        "gzip_dc_seconds": round(gzip_seconds, 2),
        "gzip_dc_cpu_seconds": round(gzip_cpu, 2),
        "convert_part_seconds": part["seconds"],
        "convert_part_cpu_seconds": part["cpu_seconds"],
        "convert_part_ratio": round(part["seconds"] / gzip_seconds, 2),
        "convert_part_cpu_ratio": round(part["cpu_seconds"] / gzip_cpu, 2),
        "convert_part_peak_rss_mb": part["peak_rss_mb"],
        "prepare_seconds": prepare["seconds"],
        "prepare_cpu_seconds": prepare["cpu_seconds"],
        "prepare_peak_rss_mb": prepare["peak_rss_mb"],
        "gather_all_shards_seconds": gather["seconds"],
        "gather_all_shards_cpu_seconds": gather["cpu_seconds"],
        "gather_peak_rss_mb": gather["peak_rss_mb"],
        # the three scattered stages' CPU over the raw data they read (this part and every
        # task_events part), beside the single process's below
        "scattered_cpu_seconds_per_gb": round(
            (prepare["cpu_seconds"] + part["cpu_seconds"] + gather["cpu_seconds"]) / raw_gb,
            1,
        ),
        "single_process_seconds": single["seconds"],
        "single_process_cpu_seconds": single["cpu_seconds"],
        # the whole conversion in one process over the raw data it reads: what
        # bench/project_cost.py charges per compressed GB by default
        "single_process_cpu_seconds_per_gb": round(single["cpu_seconds"] / raw_gb, 1),
        # the same with the kept-key searches of a full-selection run (lookup_extra below):
        # bench/project_cost.py's Google rate, measured with --min-tasks 385
        "single_process_cpu_seconds_per_gb_full_selection_lookups": round(
            (single["cpu_seconds"] + lookup_extra) / raw_gb, 1
        ),
        "lookup_extra_cpu_seconds": round(lookup_extra, 2),
        "single_process_ratio": round(single["seconds"] / gzip_seconds, 2),
        "single_process_peak_rss_mb": single["peak_rss_mb"],
        "min_tasks": args.min_tasks,
        "jobs_kept": counts.get("jobs_kept"),
        "tasks_kept": counts.get("tasks_kept"),
        "windows_kept": counts.get("windows_kept"),
        "windows_kept_share": round(counts.get("windows_kept", 0) / rows, 3),
        "single_process_phase_seconds": counts.get("phases"),
        "load_average_1min": round(os.getloadavg()[0], 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))
    if args.keep is None:
        shutil.rmtree(work)
    problems = check_request("convert_part", part["peak_rss_mb"], part["cpu_seconds"])
    if problems:
        sys.exit("bench_convert: FAILED\n" + "\n".join(problems))


if __name__ == "__main__":
    main()
