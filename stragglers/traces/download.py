"""Verified, resumable HTTP downloads of the raw traces (standard library only): a transfer
streams into `<dest>.part`, resumes with an HTTP Range request, retries transient failures
with back-off, and moves the file into place only once its SHA-256 matches (docs/download.md:
each failure's behaviour, and why not Snakemake's HTTP storage plugin).

    python -m stragglers.traces.download google --out DIR --tables task_events --parts 0-1
    python -m stragglers.traces.download url URL --out FILE --sha256 HEX
    python -m stragglers.traces.download verify /work/shared/data/google-2011
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import logging
import operator
import os
import re
import shutil
import socket
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from stragglers.formats.raw import (
    GOOGLE_TABLE_PART_COUNTS,
    GOOGLE_TABLES,
    google_part_name,
)

logger = logging.getLogger(__name__)

GOOGLE_BASE_URL = "https://storage.googleapis.com/clusterdata-2011-2"
GOOGLE_SCHEMA_NAME = "schema.csv"
GOOGLE_PARTS_PER_TABLE = 500
GOOGLE_SHA256SUM_NAME = "SHA256SUM"

ALIBABA_BASE_URL = "http://aliopentrace.oss-cn-beijing.aliyuncs.com"
# Archives per trace version; their sha256 sums come from the pipeline's config.
ALIBABA_ARCHIVES = {
    "v2018": (
        "batch_instance.tar.gz",
        "batch_task.tar.gz",
        "machine_meta.tar.gz",
        "machine_usage.tar.gz",
    ),
    "v2017": ("alibaba-trace-2017.tar.gz",),
}

PROGRESS_LOG_SECONDS = 5.0
_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
# Statuses that mean "try again later" although they are 4xx.
_RETRYABLE_4XX = {408, 425, 429}

ProgressCallback = Callable[[int, "int | None"], None]


class DownloadError(RuntimeError):
    """A download that failed for good (after retries, or at once for permanent errors)."""


class HTTPStatusError(DownloadError):
    """The server answered with a status that retrying will not change (404, 403, ...)."""

    def __init__(self, url: str, status: int, reason: str):
        super().__init__(f"HTTP {status} {reason} for {url} (not retried)")
        self.url = url
        self.status = status


class ChecksumMismatchError(DownloadError):
    """A file's SHA-256 is not the expected one; the bad bytes were kept aside if downloaded."""

    def __init__(self, path: Path, expected: str, actual: str, bad_path: Path | None = None):
        where = f"; the bad file was moved to {bad_path}" if bad_path is not None else ""
        super().__init__(f"sha256 mismatch for {path}: expected {expected}, actual {actual}{where}")
        self.path = path
        self.expected = expected
        self.actual = actual
        self.bad_path = bad_path


class _TransientError(Exception):
    """A failure worth retrying (5xx, short body, inconsistent range answer)."""


# ---------------------------------------------------------------------------------------
# SHA256SUM files and checksums


def parse_sha256sum(text: str, source: str = "SHA256SUM") -> dict[str, str]:
    """Parse `sha256sum` output into {relative path: lowercase hex digest}.

    Accepts binary-mode lines (`<hex> *path`) and text-mode lines (`<hex>  path`); blank
    lines are skipped. A malformed line, or a path listed twice with different digests, is a
    ValueError naming `source` and the line number.
    """
    sums: dict[str, str] = {}
    for line_number, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.rstrip("\r")
        if not line.strip():
            continue
        digest, sep, rest = line.partition(" ")
        digest = digest.lower()
        if not sep or not _SHA256_HEX.match(digest) or rest[:1] not in ("*", " "):
            raise ValueError(
                f"{source} line {line_number}: expected '<64 hex digits> *<path>' or "
                f"'<64 hex digits>  <path>', got {line!r}"
            )
        path = rest[1:]
        if not path:
            raise ValueError(f"{source} line {line_number}: no file name in {line!r}")
        if sums.get(path, digest) != digest:
            raise ValueError(
                f"{source} line {line_number}: {path} listed twice with different digests"
            )
        sums[path] = digest
    return sums


def normalise_sha256(value: str, setting: str = "sha256") -> str:
    """Lowercase a hex SHA-256 digest, or raise ValueError naming the setting."""
    digest = str(value).strip().lower()
    if not _SHA256_HEX.match(digest):
        raise ValueError(f"{setting}: {value!r} is not a SHA-256 digest (64 hex digits)")
    return digest


def sha256_file(path: str | os.PathLike, chunk_size: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk_size):
            digest.update(block)
    return digest.hexdigest()


def verify_file(path: str | os.PathLike, sha256: str) -> None:
    """Raise ChecksumMismatchError unless `path` has digest `sha256` (never moves the file)."""
    expected = normalise_sha256(sha256)
    actual = sha256_file(path)
    if actual != expected:
        raise ChecksumMismatchError(Path(path), expected, actual)


def verify_local_copy(
    root: str | os.PathLike,
    sums_file: str | os.PathLike | None = None,
    *,
    require_all: bool = False,
) -> dict[str, str]:
    """Check the files under `root` listed in a SHA256SUM file (default `root/SHA256SUM`).

    Returns {relative path: "ok" | "missing" | "mismatch <actual digest>"} for every listed
    path and changes no file (the copy may be read-only, like ../shared). A listed file that
    is absent is reported as "missing", and is a FileNotFoundError only with `require_all`
    (a partial copy holding a few parts is normal).
    """
    return _local_copy_status(root, sums_file, require_all)[1]


def check_local_copy(
    root: str | os.PathLike,
    sums_file: str | os.PathLike | None = None,
    *,
    require_all: bool = False,
) -> list[str]:
    """Like `verify_local_copy`, but a mismatch raises ChecksumMismatchError (file, both
    digests); returns the relative paths that verified."""
    sums, report = _local_copy_status(root, sums_file, require_all)
    for relpath, status in report.items():
        if status.startswith("mismatch"):
            raise ChecksumMismatchError(Path(root) / relpath, sums[relpath], status.split()[1])
    return [relpath for relpath, status in report.items() if status == "ok"]


def _local_copy_status(
    root: str | os.PathLike, sums_file: str | os.PathLike | None, require_all: bool
) -> tuple[dict[str, str], dict[str, str]]:
    root = Path(root)
    sums_path = Path(sums_file) if sums_file is not None else root / GOOGLE_SHA256SUM_NAME
    sums = parse_sha256sum(sums_path.read_text(), source=str(sums_path))
    report: dict[str, str] = {}
    for relpath, expected in sums.items():
        path = root / relpath
        if not path.is_file():
            if require_all:
                raise FileNotFoundError(f"{path}: listed in {sums_path} but absent")
            report[relpath] = "missing"
            continue
        actual = sha256_file(path)
        report[relpath] = "ok" if actual == expected else f"mismatch {actual}"
    return sums, report


# ---------------------------------------------------------------------------------------
# What to fetch


def select_parts(spec, total: int = GOOGLE_PARTS_PER_TABLE, setting: str = "parts") -> list[int]:
    """Part indices from a selection: "all", an int, a list of ints, or "0-4,7,10-12".

    Returns sorted unique indices in [0, total). Out-of-range or malformed entries are a
    ValueError naming `setting`.
    """
    if isinstance(spec, str):
        text = spec.strip()
        if text.lower() == "all":
            return list(range(total))
        chosen: set[int] = set()
        for item in text.split(","):
            item = item.strip()
            match = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", item)
            if not match:
                raise ValueError(
                    f"{setting}: {item!r} in {spec!r} is not an index or a range like '0-4'"
                )
            first = int(match.group(1))
            last = int(match.group(2)) if match.group(2) is not None else first
            if last < first:
                raise ValueError(f"{setting}: range {item!r} ends before it starts")
            _check_part_range(first, total, setting)
            _check_part_range(last, total, setting)
            chosen.update(range(first, last + 1))
        return sorted(chosen)
    if isinstance(spec, bool) or spec is None:
        raise ValueError(f"{setting}: {spec!r} is not a part selection")
    values = spec if isinstance(spec, (list, tuple, set, frozenset, range)) else [spec]
    chosen = set()
    for value in values:
        if isinstance(value, bool):
            raise ValueError(f"{setting}: {value!r} is not a part index")
        try:
            index = operator.index(value)
        except TypeError:
            raise ValueError(f"{setting}: {value!r} is not a part index") from None
        _check_part_range(index, total, setting)
        chosen.add(index)
    if not chosen:
        raise ValueError(f"{setting}: the selection {spec!r} is empty")
    return sorted(chosen)


def _check_part_range(index: int, total: int, setting: str) -> None:
    if not 0 <= index < total:
        raise ValueError(f"{setting}: part {index} is outside 0..{total - 1}")


def google_table_parts(table: str, total: int = GOOGLE_PARTS_PER_TABLE) -> int:
    """How many parts `table` has in the bucket: `total` (500 in clusterdata-2011-2), except
    for a table whose count is fixed (machine_events: 1, part-00000-of-00001)."""
    if table not in GOOGLE_TABLES:
        raise ValueError(f"table: {table!r} is not one of {sorted(GOOGLE_TABLES)}")
    return GOOGLE_TABLE_PART_COUNTS.get(table, total)


def google_part_relpath(table: str, index: int, total: int = GOOGLE_PARTS_PER_TABLE) -> str:
    """`task_usage/part-00000-of-00500.csv.gz`: the path in the bucket and in SHA256SUM.
    `total` is the part count of the 500-part tables; machine_events keeps its own (1)."""
    n_parts = google_table_parts(table, total)
    _check_part_range(index, n_parts, "part")
    return f"{table}/{google_part_name(index, n_parts)}"


def google_part_url(
    table: str, index: int, base_url: str = GOOGLE_BASE_URL, total: int = GOOGLE_PARTS_PER_TABLE
) -> str:
    """HTTPS address of one part of a Google clusterdata-2011-2 table."""
    return f"{base_url.rstrip('/')}/{google_part_relpath(table, index, total)}"


def google_downloads(
    tables: Iterable[str],
    parts,
    base_url: str = GOOGLE_BASE_URL,
    total: int = GOOGLE_PARTS_PER_TABLE,
) -> list[tuple[str, str]]:
    """(url, relative path) for each selected part of each table, tables in the given order.

    The selection `parts` applies to the 500-part tables; a table with a fixed part count
    (machine_events, one part) is always fetched whole: its part 0 is not the task tables'."""
    indices = select_parts(parts, total)
    pairs = []
    for table in tables:
        fixed = table in GOOGLE_TABLE_PART_COUNTS
        chosen = range(google_table_parts(table, total)) if fixed else indices
        pairs += [
            (
                google_part_url(table, index, base_url, total),
                google_part_relpath(table, index, total),
            )
            for index in chosen
        ]
    return pairs


def alibaba_archive_url(version: str, archive: str, base_url: str = ALIBABA_BASE_URL) -> str:
    """Address of an Alibaba trace archive, e.g. ("v2018", "batch_instance.tar.gz")."""
    if version not in ALIBABA_ARCHIVES:
        raise ValueError(f"version: {version!r} is not one of {sorted(ALIBABA_ARCHIVES)}")
    if archive not in ALIBABA_ARCHIVES[version]:
        raise ValueError(
            f"archive: {archive!r} is not one of {list(ALIBABA_ARCHIVES[version])} for {version}"
        )
    return f"{base_url.rstrip('/')}/{version}Traces/{archive}"


# ---------------------------------------------------------------------------------------
# The transfer


def download(
    url: str,
    dest: str | os.PathLike,
    *,
    sha256: str | None = None,
    timeout: float = 30,
    retries: int = 5,
    backoff: float = 1.0,
    progress: ProgressCallback | None = None,
    chunk_size: int = 1 << 20,
) -> Path:
    """Fetch `url` to `dest`, resuming `<dest>.part`, and verify it before it appears.

    - `dest` existing and matching `sha256` (or any existing `dest` when no digest is
      given): nothing is fetched. An existing `dest` that does not match is moved aside to
      `<dest>.bad-sha256-<digest12>` and fetched again.
    - Bytes stream into `<dest>.part`; a later attempt (or a later call) continues it with
      `Range: bytes=N-`. 206 appends; 200 (server ignored the range) restarts from byte 0;
      416 means the part already holds the whole object, which then goes to verification.
    - Connection errors, time-outs (`timeout` is the socket time-out, so a server that
      stops sending fails after `timeout` s), short bodies, 5xx, 408 and 429 are retried
      after `backoff * 2**k` s. `retries` bounds the consecutive attempts that add no bytes
      to the part file; an attempt that adds bytes resets the count, so a long transfer cut
      now and then still completes.
    - Other 4xx (404, 403, ...): HTTPStatusError at once, naming the URL.
    - Digest mismatch: the file goes to `<dest>.bad-sha256-<digest12>` and
      ChecksumMismatchError names the file and both digests. `dest` never exists unverified
      (when `sha256` is given).
    - `progress(bytes_done, bytes_total_or_None)` is called after each chunk; without it,
      a log line (bytes, total, rate) is written every few seconds.
    """
    if retries < 0:
        raise ValueError(f"retries: must be >= 0, got {retries}")
    if timeout <= 0:
        raise ValueError(f"timeout: must be > 0 seconds, got {timeout}")
    if chunk_size <= 0:
        raise ValueError(f"chunk_size: must be > 0, got {chunk_size}")
    expected = normalise_sha256(sha256) if sha256 is not None else None
    dest = Path(dest)
    part = dest.with_name(dest.name + ".part")
    dest.parent.mkdir(parents=True, exist_ok=True)

    if dest.exists():
        if expected is None:
            logger.info("%s exists (no sha256 given); not fetching %s", dest, url)
            return dest
        actual = sha256_file(dest, chunk_size)
        if actual == expected:
            logger.info("%s exists and verifies; not fetching %s", dest, url)
            return dest
        bad = _bad_path(dest, actual)
        os.replace(dest, bad)
        logger.warning(
            "%s exists but its sha256 is %s, not %s; moved it to %s and fetching again",
            dest,
            actual,
            expected,
            bad,
        )

    failures_in_a_row = 0
    while True:
        size_before = _file_size(part)
        try:
            _transfer_once(url, part, timeout, progress, chunk_size)
            break
        except (
            _TransientError,
            urllib.error.URLError,
            http.client.HTTPException,
            OSError,
        ) as error:
            # Network failures only: permanent statuses and local file errors are raised as
            # DownloadError inside _transfer_once and are not caught here. (URLError and
            # TimeoutError are OSErrors too; listed for the reader.)
            made_progress = _file_size(part) > size_before
            failures_in_a_row = 1 if made_progress else failures_in_a_row + 1
            if failures_in_a_row > retries:
                raise DownloadError(
                    f"giving up on {url} after {failures_in_a_row} attempts in a row without "
                    f"progress ({_describe(error)}); {_file_size(part)} bytes kept in {part} "
                    f"for the next run to resume"
                ) from error
            delay = backoff * 2 ** (failures_in_a_row - 1)
            logger.warning(
                "%s: %s; %d bytes so far; retry %d/%d in %.3g s",
                url,
                _describe(error),
                _file_size(part),
                failures_in_a_row,
                retries,
                delay,
            )
            time.sleep(delay)

    if expected is not None:
        actual = sha256_file(part, chunk_size)
        if actual != expected:
            bad = _bad_path(dest, actual)
            os.replace(part, bad)
            raise ChecksumMismatchError(dest, expected, actual, bad)
    os.replace(part, dest)
    logger.info(
        "%s -> %s (%d bytes%s)",
        url,
        dest,
        dest.stat().st_size,
        ", sha256 verified" if expected else ", no sha256 given",
    )
    return dest


def _bad_path(dest: Path, actual_digest: str) -> Path:
    return dest.with_name(f"{dest.name}.bad-sha256-{actual_digest[:12]}")


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _describe(error: BaseException) -> str:
    if isinstance(error, _TransientError):
        return str(error)
    if isinstance(error, urllib.error.URLError) and not isinstance(error, urllib.error.HTTPError):
        return f"connection error: {error.reason}"
    if isinstance(error, (TimeoutError, socket.timeout)):
        return f"time-out: {error or 'no data within the socket time-out'}"
    return f"{type(error).__name__}: {error}"


def _parse_content_range(value: str | None) -> tuple[int | None, int | None, int | None]:
    """'bytes 100-199/1000' -> (100, 199, 1000); 'bytes */1000' -> (None, None, 1000)."""
    if not value:
        return None, None, None
    match = re.fullmatch(r"\s*bytes\s+(?:(\d+)-(\d+)|\*)/(\d+|\*)\s*", value)
    if not match:
        raise _TransientError(f"unreadable Content-Range {value!r}")
    first = int(match.group(1)) if match.group(1) else None
    last = int(match.group(2)) if match.group(2) else None
    total = int(match.group(3)) if match.group(3) != "*" else None
    return first, last, total


def _transfer_once(
    url: str, part: Path, timeout: float, progress: ProgressCallback | None, chunk_size: int
) -> None:
    """One HTTP request that extends (or restarts) `part`; returns when the object is whole."""
    offset = _file_size(part)
    request = urllib.request.Request(url, headers={"User-Agent": "stragglers-download/1"})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as error:
        error.close()
        if error.code == 416 and offset:
            _handle_range_not_satisfiable(url, part, offset, error.headers.get("Content-Range"))
            return
        if 500 <= error.code < 600 or error.code in _RETRYABLE_4XX:
            raise _TransientError(f"HTTP {error.code} {error.reason}") from None
        raise HTTPStatusError(url, error.code, str(error.reason)) from None

    with response:
        status = response.status
        length_header = response.headers.get("Content-Length")
        body_length = int(length_header) if length_header and length_header.isdigit() else None
        if status == 206:
            first, _, total = _parse_content_range(response.headers.get("Content-Range"))
            if first != offset:
                # Bytes from another position cannot be appended; start clean next attempt.
                part.unlink(missing_ok=True)
                raise _TransientError(
                    f"asked for bytes from {offset}, server sent a range starting at {first}; "
                    f"discarded the partial file"
                )
            mode = "ab"
        elif status == 200:
            if offset:
                logger.warning(
                    "%s: server ignored the Range request (answered 200); restarting from byte 0",
                    url,
                )
            offset = 0
            total = body_length
            mode = "wb"
        else:
            raise _TransientError(f"unexpected HTTP status {status} {response.reason}")

        expected_body = body_length
        _check_free_space(part, (total - offset) if total is not None else None)
        received = 0
        started = last_log = time.monotonic()
        try:
            out = open(part, mode)
        except OSError as error:
            raise DownloadError(f"cannot write {part}: {error}") from error
        with out:
            while True:
                # read1 returns what has arrived (read would wait for a full chunk and
                # lose it on a time-out); network errors propagate and are retried.
                block = response.read1(chunk_size)
                if not block:
                    break
                try:
                    out.write(block)
                except OSError as error:
                    raise DownloadError(f"cannot write {part}: {error}") from error
                received += len(block)
                done = offset + received
                if progress is not None:
                    progress(done, total)
                else:
                    now = time.monotonic()
                    if now - last_log >= PROGRESS_LOG_SECONDS:
                        last_log = now
                        logger.info("%s", _progress_line(url, done, total, received, now - started))
            out.flush()
            os.fsync(out.fileno())
        if expected_body is not None and received < expected_body:
            # http.client returns b"" at a closed connection even when Content-Length
            # promised more, so a cut transfer shows up only here.
            raise _TransientError(f"connection closed after {received} of {expected_body} bytes")


def _handle_range_not_satisfiable(
    url: str, part: Path, offset: int, content_range: str | None
) -> None:
    """416 to `Range: bytes=offset-`: the part is complete if its size is the object's size."""
    _, _, total = _parse_content_range(content_range)
    if total is not None and total == offset:
        logger.info("%s: partial file already holds all %d bytes", url, total)
        return
    # Larger than the object (or size unknown): what we hold cannot be trusted.
    part.unlink(missing_ok=True)
    raise _TransientError(
        f"HTTP 416 for a {offset}-byte partial file (object size "
        f"{total if total is not None else 'unknown'}); discarded it to start over"
    )


def _check_free_space(part: Path, needed: int | None) -> None:
    if needed is None or needed <= 0:
        return
    free = shutil.disk_usage(part.parent).free
    if free < needed:
        raise DownloadError(
            f"not enough free disk space in {part.parent} for {part.name}: "
            f"need {_human(needed)}, have {_human(free)}"
        )


def _human(n_bytes: float) -> str:
    for unit in ("B", "KB", "MB"):
        if n_bytes < 1000:
            return f"{n_bytes:.0f} {unit}" if unit == "B" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1000
    return f"{n_bytes:.1f} GB"


def _progress_line(url: str, done: int, total: int | None, received: int, elapsed: float) -> str:
    rate = received / elapsed if elapsed > 0 else 0.0
    if total:
        share = 100 * done / total
        return f"{url}: {_human(done)} / {_human(total)} ({share:.1f}%) at {_human(rate)}/s"
    return f"{url}: {_human(done)} at {_human(rate)}/s"


# ---------------------------------------------------------------------------------------
# Google trace: SHA256SUM first, then each part verified against it


def download_google(
    out: str | os.PathLike,
    tables: Sequence[str],
    parts,
    *,
    base_url: str = GOOGLE_BASE_URL,
    timeout: float = 30,
    retries: int = 5,
    backoff: float = 1.0,
    total: int = GOOGLE_PARTS_PER_TABLE,
) -> list[Path]:
    """Fetch the bucket's SHA256SUM into `out`, then each selected part, verified with it.
    `total` is the number of parts per table (500 in clusterdata-2011-2); machine_events, one
    part, is fetched whole whatever `parts` says.

    A part missing from SHA256SUM is refused (it could not be verified). Every part is
    attempted; failures are collected and raised together at the end as one DownloadError.
    """
    out = Path(out)
    for table in tables:
        if table not in GOOGLE_TABLES:
            raise ValueError(f"tables: {table!r} is not one of {sorted(GOOGLE_TABLES)}")
    wanted = google_downloads(tables, parts, base_url, total)  # bad selections fail first
    sums_path = download(
        f"{base_url.rstrip('/')}/{GOOGLE_SHA256SUM_NAME}",
        out / GOOGLE_SHA256SUM_NAME,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
    )
    sums = parse_sha256sum(sums_path.read_text(), source=str(sums_path))
    fetched: list[Path] = []
    failures: list[str] = []
    # the trace's schema.csv documents the columns; fetched (verified) when SHA256SUM lists it
    if GOOGLE_SCHEMA_NAME in sums:
        wanted = [(f"{base_url.rstrip('/')}/{GOOGLE_SCHEMA_NAME}", GOOGLE_SCHEMA_NAME), *wanted]
    else:
        logger.info("%s is not listed in %s: not fetched", GOOGLE_SCHEMA_NAME, sums_path)
    for url, relpath in wanted:
        if relpath not in sums:
            failures.append(
                f"{relpath}: no entry in {sums_path}, refusing an unverifiable download"
            )
            continue
        try:
            fetched.append(
                download(
                    url,
                    out / relpath,
                    sha256=sums[relpath],
                    timeout=timeout,
                    retries=retries,
                    backoff=backoff,
                )
            )
        except DownloadError as error:
            logger.error("%s", error)
            failures.append(str(error))
    if failures:
        raise DownloadError(
            f"{len(failures)} of {len(failures) + len(fetched)} parts failed:\n  "
            + "\n  ".join(failures)
        )
    return fetched


# ---------------------------------------------------------------------------------------
# Command line


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m stragglers.traces.download", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def add_transfer_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--timeout", type=float, default=30.0, help="socket time-out, seconds")
        p.add_argument("--retries", type=int, default=5, help="attempts in a row without progress")
        p.add_argument(
            "--backoff", type=float, default=1.0, help="first retry delay, seconds (doubles)"
        )

    google = sub.add_parser(
        "google", help="parts of Google clusterdata-2011-2, verified with SHA256SUM"
    )
    google.add_argument("--out", required=True, type=Path)
    google.add_argument("--tables", nargs="+", required=True, choices=sorted(GOOGLE_TABLES))
    google.add_argument(
        "--parts",
        required=True,
        help='"all", or indices and ranges like 0-4,7 (machine_events has one part, always fetched)',
    )
    google.add_argument("--base-url", default=GOOGLE_BASE_URL)
    add_transfer_options(google)

    url = sub.add_parser("url", help="one URL, optionally verified")
    url.add_argument("url")
    url.add_argument("--out", required=True, type=Path)
    url.add_argument("--sha256", default=None)
    add_transfer_options(url)

    verify = sub.add_parser("verify", help="check a local copy against its SHA256SUM (no download)")
    verify.add_argument("root", type=Path)
    verify.add_argument("--sums", type=Path, default=None, help="default: ROOT/SHA256SUM")
    verify.add_argument(
        "--require-all", action="store_true", help="a listed file that is absent is an error"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        if args.command == "google":
            paths = download_google(
                args.out,
                args.tables,
                args.parts,
                base_url=args.base_url,
                timeout=args.timeout,
                retries=args.retries,
                backoff=args.backoff,
            )
            print(f"{len(paths)} files verified under {args.out}")
        elif args.command == "url":
            path = download(
                args.url,
                args.out,
                sha256=args.sha256,
                timeout=args.timeout,
                retries=args.retries,
                backoff=args.backoff,
            )
            print(path)
        else:
            report = verify_local_copy(args.root, args.sums, require_all=args.require_all)
            for relpath, status in report.items():
                print(f"{status.split()[0]:8s} {relpath}")
            if any(status.startswith("mismatch") for status in report.values()):
                return 1
    except (DownloadError, ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
