"""Writing generated tables: headerless CSV, deterministic gzip, atomic rename."""

from __future__ import annotations

import gzip
import io
import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

_MAX_PENDING_CHUNKS = 2  # chunks queued for compression (bounds memory)
_CSV_OPTIONS = pacsv.WriteOptions(include_header=False, quoting_style="none")


def column(values: np.ndarray, missing: np.ndarray | None = None) -> pa.Array:
    """An Arrow column; `missing` marks empty fields."""
    if missing is not None and missing.any():
        return pa.array(values, mask=np.asarray(missing, bool))
    return pa.array(values)


def null_column(n: int) -> pa.Array:
    return pa.nulls(n, pa.int64())


def strings(indices: np.ndarray, names: list[str]) -> pa.Array:
    """A string column from indices into `names` (stored as a dictionary)."""
    return pa.DictionaryArray.from_arrays(
        pa.array(np.asarray(indices, np.int32)), pa.array(names, pa.string())
    )


def csv_bytes(columns: dict[str, pa.Array]) -> bytes:
    """Headerless CSV text of the columns, in the given order."""
    table = pa.table(columns)
    if table.num_rows == 0:
        return b""
    sink = io.BytesIO()
    pacsv.write_csv(table, sink, write_options=_CSV_OPTIONS)
    return sink.getvalue()


class AtomicFile:
    """A file written under a temporary name and renamed into place on `commit`.

    A crash leaves only `<name>.partial`, never a complete-looking file. With `gzip_level`
    the content is gzip-compressed with mtime 0 and no file name in the header, so equal
    content gives equal bytes.
    """

    def __init__(self, path: str | Path, gzip_level: int | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.partial = self.path.with_name(self.path.name + ".partial")
        self._raw = open(self.partial, "wb")
        self._stream = (
            gzip.GzipFile(
                filename="", mode="wb", fileobj=self._raw, mtime=0, compresslevel=gzip_level
            )
            if gzip_level is not None
            else self._raw
        )
        # Compression runs on one worker thread (zlib releases the GIL), overlapping with
        # the caller producing the next chunk; one worker keeps the chunks in order.
        self._worker = ThreadPoolExecutor(max_workers=1)
        self._pending: deque[Future] = deque()
        self.rows = 0

    def write(self, data: bytes, rows: int = 0) -> None:
        while len(self._pending) >= _MAX_PENDING_CHUNKS:
            self._pending.popleft().result()
        self._pending.append(self._worker.submit(self._stream.write, data))
        self.rows += rows

    def write_columns(self, columns: dict[str, pa.Array]) -> None:
        """Format the columns as CSV on the worker thread too (Arrow releases the GIL)."""
        while len(self._pending) >= _MAX_PENDING_CHUNKS:
            self._pending.popleft().result()
        self._pending.append(self._worker.submit(lambda: self._stream.write(csv_bytes(columns))))
        self.rows += len(next(iter(columns.values()))) if columns else 0

    def _drain(self) -> None:
        try:
            while self._pending:
                self._pending.popleft().result()
        finally:
            self._worker.shutdown(wait=True)

    def commit(self) -> None:
        self._drain()
        if self._stream is not self._raw:
            self._stream.close()
        self._raw.flush()
        os.fsync(self._raw.fileno())
        self._raw.close()
        os.replace(self.partial, self.path)

    def abort(self) -> None:
        try:
            try:
                self._drain()
            finally:
                if self._stream is not self._raw:
                    self._stream.close()
                self._raw.close()
        except Exception:  # the original error matters more than a failed cleanup
            pass
        finally:
            self.partial.unlink(missing_ok=True)

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def write_atomic(
    path: str | Path, data: bytes, gzip_level: int | None = None, rows: int = 0
) -> None:
    with AtomicFile(path, gzip_level) as f:
        f.write(data, rows)
