"""Reading headerless raw-trace CSV parts (gzip or plain) in bounded-size chunks. Fast path:
blocks of whole lines, decompressed by ISA-L (`isal.igzip`, about 4x zlib's speed, the same
bytes) in a thread and parsed by pyarrow's CSV parser with explicit names and types; a row
with the wrong number of columns is skipped and recorded. A value that cannot be parsed sends
the file to an exact line-by-line path that records every bad row with its line number. A
truncated or corrupt gzip stream is an error naming the file: a part that cannot be read to
its end is never half-used.
"""

from __future__ import annotations

import csv
import gzip
import io
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
from isal import igzip, isal_zlib

# A chunk is the record batches read until it holds this many rows. Its boundaries decide how the
# machine-usage sums are grouped in floating point (stragglers.convert.machines), so changing
# it, or the block size, changes the last bits of some sums.
CHUNK_ROWS = 1_000_000


class RawTraceError(RuntimeError):
    """A raw trace file that cannot be used; the message names the file (and line)."""


@dataclass
class SkippedRows:
    """Rows skipped while reading, with reasons; at most `keep` examples are stored."""

    count: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    keep: int = 20

    def add(self, path: Path | str, line: int | None, reason: str, kind: str, n: int = 1) -> None:
        """Record `n` skipped rows of one kind (n = 0 records nothing)."""
        if n <= 0:
            return
        self.count += n
        self.by_reason[kind] = self.by_reason.get(kind, 0) + n
        if len(self.examples) < self.keep:
            where = f"{path}:{line}" if line is not None else str(path)
            self.examples.append(f"{where}: {reason}")

    def snapshot(self) -> tuple:
        return self.count, dict(self.by_reason), list(self.examples)

    def restore(self, state: tuple) -> None:
        self.count, self.by_reason, self.examples = state[0], dict(state[1]), list(state[2])

    def as_dict(self) -> dict:
        return {"count": self.count, "by_reason": dict(self.by_reason), "examples": self.examples}


def _open_text(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _arrow_types(columns: list[str], types: dict[str, str]) -> dict[str, pa.DataType]:
    mapping = {"int": pa.int64(), "float": pa.float64(), "str": pa.string()}
    return {c: mapping[types.get(c, "str")] for c in columns}


def iter_csv_chunks(
    path: Path | str,
    columns: list[str],
    types: dict[str, str],
    usecols: list[str] | None = None,
    skipped: SkippedRows | None = None,
    block_size: int = 16 << 20,
    arrow: bool = False,
) -> Iterator[pd.DataFrame | pa.Table]:
    """Yield DataFrames of `usecols` from a headerless CSV part, chunk by chunk (with
    `arrow`, Arrow tables: no pandas copy, for readers that take one column at a time).

    `types` maps column -> "int" | "float" | "str"; missing fields become NaN (ints are read
    as nullable by going through float when a column has gaps).
    """
    path = Path(path)
    usecols = list(usecols or columns)
    skipped = skipped if skipped is not None else SkippedRows()
    arrow_types = _arrow_types(columns, types)
    # Empty fields in int columns must read as missing: read them as float, cast later.
    read_types = {c: (pa.float64() if t == pa.int64() else t) for c, t in arrow_types.items()}

    lines_before = 0  # lines of the file before the block being parsed

    def on_invalid(row: pacsv.InvalidRow) -> str:
        line = None if row.number is None or row.number < 0 else lines_before + row.number
        skipped.add(
            path,
            line,
            f"expected {row.expected_columns} columns, got {row.actual_columns}",
            "wrong column count",
        )
        return "skip"

    before = skipped.snapshot()
    rows_yielded = 0
    read_options = pacsv.ReadOptions(column_names=columns, use_threads=False)
    parse_options = pacsv.ParseOptions(invalid_row_handler=on_invalid)
    convert_options = pacsv.ConvertOptions(
        column_types=read_types, include_columns=usecols, strings_can_be_null=False
    )
    source = igzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")
    blocks = _line_blocks(source, block_size)
    try:
        batches = []
        for block, n_lines in blocks:
            read_options.block_size = len(block) + 1  # the block as one record batch
            table = pacsv.read_csv(
                pa.py_buffer(block),
                read_options=read_options,
                parse_options=parse_options,
                convert_options=convert_options,
            )
            lines_before += n_lines
            del block
            batches.extend(table.to_batches())
            del table
            if sum(b.num_rows for b in batches) >= CHUNK_ROWS:
                frame = _to_table(batches) if arrow else _to_frame(batches, usecols, types)
                rows_yielded += len(frame)
                yield frame
                del frame  # the consumer's reference is the only one while the next is read
        if batches:
            yield _to_table(batches) if arrow else _to_frame(batches, usecols, types)
    except (pa.ArrowInvalid, OSError, EOFError, isal_zlib.error) as error:
        message = str(error)
        if _is_corrupt_stream(message) or not isinstance(error, pa.ArrowInvalid):
            raise RawTraceError(
                f"{path}: cannot be read to its end ({message.splitlines()[0]}); "
                "the file is truncated or corrupt: download it again"
            ) from error
        # an unparsable value somewhere: redo this file exactly, line by line, recounting its
        # skipped rows from the start and not repeating the valid rows already yielded
        skipped.restore(before)
        for frame in _slow_path(path, columns, types, usecols, skipped, skip_valid=rows_yielded):
            yield pa.Table.from_pandas(frame, preserve_index=False) if arrow else frame
    finally:
        blocks.close()  # first: its thread may be reading from `source`
        source.close()


def _line_blocks(source: BinaryIO, block_size: int) -> Iterator[tuple[memoryview, int]]:
    """The file's bytes as blocks of whole lines, with each block's number of lines.

    `block_size` bytes are read at a time and cut after the last line end; the rest starts the
    next block, and the last piece read is one block with all that is left (a last line with
    no line end included). These are the blocks, and so the record batches, of pyarrow's
    streaming CSV reader (`open_csv`) with the same block size, but only a few blocks are in
    memory: the streaming reader holds a queue of read-ahead blocks (about 0.4 GB on a
    real-size task_usage part). The next pieces are decompressed in a thread while a block is
    parsed (ISA-L releases the GIL)."""
    with ThreadPoolExecutor(max_workers=1) as reader:
        piece = reader.submit(source.read, block_size).result()
        following = reader.submit(source.read, block_size)
        carried = b""
        while piece:
            after = following.result()  # empty: `piece` is the last
            if after:
                following = reader.submit(source.read, block_size)
            data = carried + piece if carried else piece
            if not after:
                yield memoryview(data), _count_lines(data, len(data))
                return
            cut = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
            carried = data[cut:]
            if cut:
                yield memoryview(data)[:cut], _count_lines(data, cut)
            del data
            piece = after


def _count_lines(data: bytes, end: int) -> int:
    """Lines in data[:end] as the CSV parser numbers them (a line end is \\n, \\r or \\r\\n).
    numpy's vectorised comparison counts the \\n (bytes.count is 2-3x slower on a block), and
    \\r is looked for with memchr first: most files have none."""
    view = np.frombuffer(data, dtype=np.uint8, count=end)
    n_lf = int(np.count_nonzero(view == ord("\n")))
    if data.find(b"\r", 0, end) < 0:
        return n_lf
    n_cr = int(np.count_nonzero(view == ord("\r")))
    return n_lf + n_cr - data.count(b"\r\n", 0, end)


def _is_corrupt_stream(message: str) -> bool:
    lowered = message.lower()
    return any(k in lowered for k in ("gzip", "truncated", "decompress", "zlib", "inflate"))


def _to_table(batches: list[pa.RecordBatch]) -> pa.Table:
    table = pa.Table.from_batches(batches)
    batches.clear()
    return table


def _to_frame(
    batches: list[pa.RecordBatch], usecols: list[str], types: dict[str, str]
) -> pd.DataFrame:
    """The batches as one DataFrame; `batches` is emptied, and each Arrow column is freed as
    soon as it is converted (one column per block: no consolidating copy)."""
    table = _to_table(batches)
    frame = table.to_pandas(split_blocks=True, self_destruct=True)
    del table
    # the reader already yields `usecols` in order: selecting them again would copy every column
    return frame if list(frame.columns) == usecols else frame[usecols]


def _slow_path(
    path: Path,
    columns: list[str],
    types: dict[str, str],
    usecols: list[str],
    skipped: SkippedRows,
    skip_valid: int = 0,
    chunk_rows: int = 500_000,
) -> Iterator[pd.DataFrame]:
    index = {c: i for i, c in enumerate(columns)}
    parsers = {"int": _parse_int, "float": _parse_float, "str": str}
    rows: list[list] = []
    try:
        with _open_text(path) as handle:
            for line_number, fields in enumerate(csv.reader(handle), start=1):
                if len(fields) != len(columns):
                    skipped.add(
                        path,
                        line_number,
                        f"expected {len(columns)} columns, got {len(fields)}",
                        "wrong column count",
                    )
                    continue
                try:
                    row = [parsers[types.get(c, "str")](fields[index[c]]) for c in usecols]
                except ValueError as error:
                    skipped.add(path, line_number, str(error), "unparsable value")
                    continue
                if skip_valid > 0:
                    skip_valid -= 1
                    continue
                rows.append(row)
                if len(rows) >= chunk_rows:
                    yield _rows_to_frame(rows, usecols, types)
                    rows = []
    except (OSError, EOFError, zlib.error) as error:
        raise RawTraceError(
            f"{path}: cannot be read to its end ({error}); the file is truncated or corrupt"
        ) from error
    if rows:
        yield _rows_to_frame(rows, usecols, types)


def _parse_int(text: str) -> float:
    if text == "":
        return np.nan
    try:
        return float(int(text))
    except ValueError:
        raise ValueError(f"not an integer: {text!r}") from None


def _parse_float(text: str) -> float:
    if text == "":
        return np.nan
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"not a number: {text!r}") from None


def _rows_to_frame(rows: list[list], usecols: list[str], types: dict[str, str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=usecols)
    for c in usecols:
        if types.get(c, "str") in ("int", "float"):
            frame[c] = frame[c].astype(float)
    return frame
