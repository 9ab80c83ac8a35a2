"""The raw-CSV reader (`stragglers.traces.rawcsv.iter_csv_chunks`) against an independent
reference, pyarrow's own streaming CSV reader (`pyarrow.csv.open_csv`): the same rows, values and
chunk boundaries (the boundaries decide how the machine-usage sums are grouped in floating
point), on generated files and on the real task_events part in ../shared."""

from __future__ import annotations

import gzip
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from stragglers.formats import raw as schema
from stragglers.traces import rawcsv
from stragglers.traces.rawcsv import RawTraceError, iter_csv_chunks

COLUMNS = ["a", "b", "c"]
TYPES = {"a": "int", "b": "float", "c": "int"}
REAL_EVENTS = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "data"
    / "google-2011"
    / "task_events"
    / "part-00000-of-00500.csv.gz"
)


def lines(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 10**12, size=(n, 2))
    gaps = rng.random(n) < 0.05  # empty fields read as missing
    return [f"{a},{'' if gap else b / 7},{i}" for i, ((a, b), gap) in enumerate(zip(values, gaps))]


def write(path: Path, text: str) -> Path:
    data = text.encode()
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)
    return path


def reference_chunks(path, columns, types, usecols, block_size, chunk_rows):
    """The chunks as pyarrow's streaming reader gives them: its record batches (one per block)
    gathered until a chunk holds `chunk_rows` rows."""
    arrow_types = rawcsv._arrow_types(columns, types)
    read_types = {c: (pa.float64() if t == pa.int64() else t) for c, t in arrow_types.items()}
    source = pa.input_stream(str(path), compression="gzip" if path.suffix == ".gz" else None)
    reader = pacsv.open_csv(
        source,
        read_options=pacsv.ReadOptions(column_names=columns, block_size=block_size),
        convert_options=pacsv.ConvertOptions(
            column_types=read_types, include_columns=usecols, strings_can_be_null=False
        ),
    )
    chunks, batches = [], []
    for batch in reader:
        batches.append(batch)
        if sum(b.num_rows for b in batches) >= chunk_rows:
            chunks.append(pa.Table.from_batches(batches))
            batches = []
    if batches:
        chunks.append(pa.Table.from_batches(batches))
    return chunks


def assert_same_chunks(path, columns, types, usecols, block_size, chunk_rows, monkeypatch):
    monkeypatch.setattr(rawcsv, "CHUNK_ROWS", chunk_rows)
    ours = list(
        iter_csv_chunks(path, columns, types, usecols=usecols, block_size=block_size, arrow=True)
    )
    theirs = reference_chunks(path, columns, types, usecols, block_size, chunk_rows)
    assert len(theirs) > 2  # the case has several chunks
    assert [len(t) for t in ours] == [len(t) for t in theirs]
    for mine, reference in zip(ours, theirs):
        assert mine.schema == reference.schema
        assert mine.equals(reference)
        assert [b.num_rows for b in mine.to_batches()] == [
            b.num_rows for b in reference.to_batches()
        ]


@pytest.mark.parametrize(
    "name, line_end, trailing",
    [
        ("part.csv.gz", "\n", True),
        ("part.csv", "\n", True),
        ("crlf.csv.gz", "\r\n", True),
        ("no-final-line-end.csv.gz", "\n", False),
    ],
)
def test_chunks_are_those_of_pyarrows_streaming_reader(
    tmp_path, monkeypatch, name, line_end, trailing
):
    text = line_end.join(lines(20_000)) + (line_end if trailing else "")
    path = write(tmp_path / name, text)
    assert_same_chunks(path, COLUMNS, TYPES, None, 16_384, 3_000, monkeypatch)


@pytest.mark.skipif(not REAL_EVENTS.exists(), reason=f"no real trace rows at {REAL_EVENTS}")
def test_chunks_of_the_real_task_events_part_are_those_of_pyarrow(monkeypatch):
    """Real rows (450,146 of them, with empty fields and string columns), 1 MB blocks."""
    usecols = ["timestamp", "job_id", "task_index", "machine_id", "event_type", "priority"]
    assert_same_chunks(
        REAL_EVENTS,
        schema.GOOGLE_TASK_EVENTS,
        {"timestamp": "int", "job_id": "int", "task_index": "int", "machine_id": "int"},
        usecols,
        1 << 20,
        100_000,
        monkeypatch,
    )


@pytest.mark.parametrize("line_end", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_rows_with_a_wrong_column_count_are_skipped_and_located_in_any_block(tmp_path, line_end):
    rows = lines(5_000)
    for line in (3, 2_500, 4_999):  # 1-based file lines, in the first, a middle and the last block
        rows[line - 1] = "1,2"
    path = write(tmp_path / "bad.csv.gz", line_end.join(rows) + line_end)
    skipped = rawcsv.SkippedRows()
    tables = list(iter_csv_chunks(path, COLUMNS, TYPES, skipped=skipped, block_size=8_192))
    assert sum(len(t) for t in tables) == 5_000 - 3
    assert skipped.by_reason == {"wrong column count": 3}
    assert skipped.examples == [
        f"{path}:{line}: expected 3 columns, got 2" for line in (3, 2_500, 4_999)
    ]


def test_a_corrupt_gzip_stream_is_an_error_naming_the_file(tmp_path):
    data = bytearray(gzip.compress(("\n".join(lines(50_000)) + "\n").encode(), mtime=0))
    data[2_000:2_100] = bytes(b ^ 0xFF for b in data[2_000:2_100])  # flipped bits mid-stream
    path = tmp_path / "flipped.csv.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(RawTraceError, match="flipped.csv.gz: cannot be read to its end"):
        list(iter_csv_chunks(path, COLUMNS, TYPES, block_size=8_192))


def test_a_reader_closed_early_stops_its_read_ahead_thread_and_closes_the_file(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(rawcsv, "CHUNK_ROWS", 1_000)
    path = write(tmp_path / "part.csv.gz", "\n".join(lines(20_000)) + "\n")
    before = threading.active_count()
    chunks = iter_csv_chunks(path, COLUMNS, TYPES, block_size=8_192)
    first = next(chunks)
    assert len(first) >= 1_000
    assert threading.active_count() == before + 1  # the block being read ahead
    assert open_descriptors_of(path) == 1
    chunks.close()
    assert threading.active_count() == before
    assert open_descriptors_of(path) == 0


def open_descriptors_of(path: Path) -> int:
    descriptors = Path("/proc/self/fd")
    if not descriptors.exists():
        pytest.skip("no /proc/self/fd to list this process's open files")
    targets = []
    for fd in descriptors.iterdir():
        try:
            targets.append(fd.readlink())
        except OSError:  # closed while listing
            continue
    return sum(target == path for target in targets)
