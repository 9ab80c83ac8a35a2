"""Conversion of one real-size Google task_usage part against `gzip -dc part > /dev/null` on
the same file, in the same run (a benchmark, not a test). From the repository root:

    python bench/bench_convert.py [--jobs 900] [--keep DIR]

A real clusterdata-2011-2 task_usage part is ~90 MB of gzip and ~2.5 million rows; the part
generated here has the same schema and about as many rows (--jobs sets the size). Conversion runs
in a fresh process so its peak memory (max RSS) is its own. Prints JSON and writes
bench/out/convert.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child_max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=1800)
    parser.add_argument("--seed", type=int, default=20220301)
    parser.add_argument("--keep", type=Path, default=None, help="reuse/keep the generated trace here")
    args = parser.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-convert-"))
    raw = work / "raw"
    if not (raw / "task_usage").exists():
        from stragglers.generate import GoogleGeneratorConfig, generate_google

        # the generator writes at least two parts (balanced by rows); keep the first usage part
        # only, with all task_events: one real-size part, converted with its jobs' events
        generate_google(raw, GoogleGeneratorConfig.from_dict({"n_jobs": args.jobs, "seed": args.seed, "n_parts": 2}))
        for extra in sorted((raw / "task_usage").glob("part-*.csv.gz"))[1:]:
            extra.unlink()
    usage_part = next((raw / "task_usage").glob("part-*.csv.gz"))
    with gzip.open(usage_part, "rb") as handle:
        rows = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 24), b""))

    began = time.perf_counter()
    subprocess.run(f"gzip -dc {usage_part} > /dev/null", shell=True, check=True)
    gzip_seconds = time.perf_counter() - began

    out = work / "converted"
    code = (
        "import json, sys; from stragglers.convert import convert_google; "
        f"s = convert_google({str(raw)!r}, {str(out)!r}, dataset='bench', n_shards=8); "
        "print(json.dumps({**s['counts'], 'phases': s['seconds']}))"
    )
    rss_before = child_max_rss_mb()
    began = time.perf_counter()
    completed = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    convert_seconds = time.perf_counter() - began
    peak = child_max_rss_mb()
    counts = json.loads(completed.stdout.strip().splitlines()[-1])
    result = {
        "benchmark": "convert one real-size task_usage part vs gzip -dc",
        "usage_part_mb": round(usage_part.stat().st_size / 1e6, 1),
        "usage_rows": rows,
        "task_events_mb": round(sum(p.stat().st_size for p in (raw / "task_events").glob("*.gz")) / 1e6, 1),
        "gzip_dc_seconds": round(gzip_seconds, 2),
        "convert_seconds": round(convert_seconds, 2),
        "ratio": round(convert_seconds / gzip_seconds, 2),
        "convert_peak_rss_mb": round(peak, 0) if peak > rss_before else None,
        "jobs_kept": counts.get("jobs_kept"),
        "windows_kept": counts.get("windows_kept"),
        "phase_seconds": counts.get("phases"),
        "usage_pass_ratio": round(counts["phases"]["task_usage"] / gzip_seconds, 2),
    }
    (ROOT / "bench" / "out").mkdir(parents=True, exist_ok=True)
    (ROOT / "bench" / "out" / "convert.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))
    if args.keep is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
