"""The task table (dataset kind `tasks-table`): a folder holding `tasks.{csv,csv.gz,parquet}`,
one row per task attempt, and optionally `usage.*`, one row per measurement window. The format
is `tasks_table.schema.json` beside this module; reading validates every column against it
with a compiled validator (fastjsonschema), column by column, and the rules that relate
columns or rows here, vectorised. Every error is a TaskTableError naming the file, the row and
the column (docs/your-own-trace.md).
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

SCHEMA_PATH = Path(__file__).with_name("tasks_table.schema.json")
# table -> the schema's row definition
TABLES = {"tasks": "task_attempt", "usage": "usage_window"}
SUFFIXES = (".csv", ".csv.gz", ".parquet")
STATUSES = ("finished", "failed", "killed", "evicted", "lost")
REQUEST_PREFIX = "request_"
ROW = "row"  # the 1-based row number each read row keeps, for later errors
# the usage columns that are not measurements
USAGE_KEYS = ["job_id", "task_id", "attempt", "window_start", "window_end", "available_from"]
ATTEMPT_KEYS = ["job_id", "task_id", "attempt"]


class TaskTableError(ValueError):
    """Bad input in a task table: the message names the file, the row and the column."""


@functools.cache
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())


def _resolved(item: dict[str, Any]) -> dict[str, Any]:
    """A row definition's item with its `$ref` (to one of the schema's `$defs`) inlined."""
    if "$ref" not in item:
        return item
    target = schema()["$defs"][item["$ref"].removeprefix("#/$defs/")]
    return {**target, **{key: value for key, value in item.items() if key != "$ref"}}


def column_schema(table: str) -> dict[str, Any]:
    """The row definition of `table` turned into one for the table held as columns ({column:
    [values]}): each column's values are an array whose items follow the row definition, so
    a validation error's path is (column, row)."""
    row = schema()["$defs"][TABLES[table]]

    def as_array(item):
        if isinstance(item, bool):
            return item
        # inlined: a referenced definition costs a function call per cell
        return {"type": "array", "items": _resolved(item)}

    return {
        "type": "object",
        "required": row["required"],
        "properties": {name: as_array(item) for name, item in row["properties"].items()},
        "patternProperties": {
            pattern: as_array(item) for pattern, item in row.get("patternProperties", {}).items()
        },
        "additionalProperties": as_array(row.get("additionalProperties", True)),
    }


@functools.cache
def _validator(table: str):
    import fastjsonschema

    return fastjsonschema.compile(column_schema(table))


def find_table(folder: Path | str, table: str, required: bool = True) -> Path | None:
    """`<folder>/<table>.csv|.csv.gz|.parquet`; none (when required) or more than one is an
    error naming the folder."""
    folder = Path(folder)
    found = [
        folder / f"{table}{suffix}" for suffix in SUFFIXES if (folder / f"{table}{suffix}").exists()
    ]
    if len(found) > 1:
        raise TaskTableError(
            f"{folder}: more than one {table} table ({', '.join(p.name for p in found)}); keep one"
        )
    if not found and required:
        raise TaskTableError(
            f"{folder}: no {table} table ({', '.join(table + s for s in SUFFIXES)})"
        )
    return found[0] if found else None


def _numeric_kind(item: Any) -> str | None:
    """ "number", "integer", "boolean" or None (text or anything) for a row definition item."""
    if not isinstance(item, dict):
        return None
    types = item.get("type", [])
    types = [types] if isinstance(types, str) else types
    if "string" in types:  # an id (text or integer): kept as written ("007" stays "007")
        return None
    for kind in ("integer", "number", "boolean"):
        if kind in types:
            return kind
    return None


def column_kinds(table: str, columns: list[str]) -> dict[str, str | None]:
    """Each column's value kind by the row definition: explicit property, pattern, or the
    definition's additionalProperties."""
    row = schema()["$defs"][TABLES[table]]
    kinds = {}
    for column in columns:
        if column in row["properties"]:
            item = _resolved(row["properties"][column])
        else:
            patterns = [
                i for p, i in row.get("patternProperties", {}).items() if re.search(p, column)
            ]
            item = patterns[0] if patterns else row.get("additionalProperties", True)
        kinds[column] = _numeric_kind(item)
    return kinds


_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


def _read_raw(path: Path) -> pd.DataFrame:
    """The table as read: Parquet with its types, CSV as text (only an empty cell is missing)."""
    try:
        if path.name.endswith(".parquet"):
            return pd.read_parquet(path)
        return pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    except Exception as error:
        raise TaskTableError(f"{path}: cannot be read ({type(error).__name__}: {error})") from None


def _integers_where_whole(out: pd.Series, numbers: pd.Series) -> pd.Series:
    """`out` with the finite integral values of `numbers` as Python integers (1.0 from a CSV
    or a Parquet column with gaps is the integer 1)."""
    whole = np.isfinite(numbers) & (numbers == np.floor(numbers))
    return out.where(~whole, numbers.where(whole, 0).astype(np.int64).astype(object))


def _typed(values: pd.Series, kind: str | None) -> pd.Series:
    """Cells of a column in the kind the definition wants where they parse; a cell that does not
    stays as it was, so that the validator reports it. Missing cells become None."""
    present = values.notna()
    out = values.astype(object)
    if kind in ("number", "integer") and values.dtype.kind not in "mM":
        # (a date or duration column is not seconds: left as it is, the validator refuses it)
        parsed = pd.to_numeric(values, errors="coerce")
        out = out.where(present & parsed.isna(), parsed.astype(object))
        if kind == "integer":
            out = _integers_where_whole(out, parsed)
    elif kind == "boolean" and values.dtype != bool:
        text = values.astype(str).str.strip().str.lower()
        out = out.where(~text.isin(_TRUE), True).where(~text.isin(_FALSE), False)
    elif kind is None and values.dtype.kind == "f":
        out = _integers_where_whole(out, values)  # ids read from Parquet as floats
    return out.where(present, None)


def _describe(value: Any) -> str:
    return "an empty cell" if value is None else repr(value)


def validate(frame: pd.DataFrame, table: str, path: Path) -> pd.DataFrame:
    """Validate `frame` (as read) against the table's definition; returns it with every
    column in the kind the definition wants (as objects; None where missing)."""
    import fastjsonschema

    kinds = column_kinds(table, list(frame.columns))
    typed = {column: _typed(frame[column], kinds[column]) for column in frame.columns}
    try:
        _validator(table)({column: values.tolist() for column, values in typed.items()})
    except fastjsonschema.JsonSchemaValueException as error:
        path_parts = list(error.path)[1:]
        if error.rule == "required" or len(path_parts) < 2:
            required = schema()["$defs"][TABLES[table]]["required"]
            missing = [c for c in required if c not in frame.columns]
            raise TaskTableError(
                f"{path}: column {', '.join(missing) or '?'} missing (a {table} table needs "
                f"{', '.join(required)})"
            ) from None
        column, row = path_parts[0], int(path_parts[1])
        raise TaskTableError(
            f"{path}: row {row + 1}, column {column}: {_describe(error.value)} is not valid "
            f"({error.message.replace('data.' + column + '[' + str(row) + ']', 'the value')})"
        ) from None
    return pd.DataFrame(typed, index=frame.index)


def _ids(values: pd.Series) -> pd.Series:
    return values.map(str)


def _fail_at(path: Path, frame: pd.DataFrame, bad: np.ndarray, column: str, why: str) -> None:
    """Raise for the first row of `bad` (a boolean mask over `frame`), if any."""
    rows = np.flatnonzero(bad)
    if len(rows):
        first = frame.iloc[rows[0]]
        raise TaskTableError(
            f"{path}: row {int(first[ROW])}, column {column}: {why(first) if callable(why) else why}"
            + (f" ({len(rows)} rows like it)" if len(rows) > 1 else "")
        )


def read_tasks(path: Path | str) -> pd.DataFrame:
    """The tasks table, validated: job_id and task_id as text, attempt int64, times float64
    (end NaN while running), status text ("" while running), machine_id text ("" if
    unknown), speculative bool, request_* float64, and `row` (1-based)."""
    path = Path(path)
    frame = validate(_read_raw(path), "tasks", path)
    out = pd.DataFrame(
        {
            "job_id": _ids(frame["job_id"]),
            "task_id": _ids(frame["task_id"]),
            "attempt": frame["attempt"].astype(np.int64),
            "start_time": frame["start_time"].astype(np.float64),
            "end_time": pd.to_numeric(frame["end_time"]).astype(np.float64),
            "status": frame["status"].fillna("").astype(str),
            "machine_id": (
                frame["machine_id"].map(lambda v: "" if v is None else str(v))
                if "machine_id" in frame
                else ""
            ),
            "speculative": (
                np.array([value is True for value in frame["speculative"]])
                if "speculative" in frame
                else False
            ),
        }
    )
    for column in request_columns(frame.columns):
        out[column] = pd.to_numeric(frame[column]).astype(np.float64)
    out[ROW] = np.arange(1, len(out) + 1)
    check_attempts(out, path)
    return out.reset_index(drop=True)


def request_columns(columns) -> list[str]:
    return [c for c in columns if str(c).startswith(REQUEST_PREFIX)]


def ignored_columns(table: str, columns) -> list[str]:
    """Columns of the tasks table the conversion does not use (allowed, listed in the report)."""
    row = schema()["$defs"][TABLES[table]]
    return [
        c for c in columns if c not in row["properties"] and not str(c).startswith(REQUEST_PREFIX)
    ]


def check_attempts(tasks: pd.DataFrame, path: Path) -> None:
    """The rules across columns and rows of the tasks table (vectorised)."""
    end, start = tasks["end_time"].to_numpy(), tasks["start_time"].to_numpy()
    running = tasks["status"].to_numpy() == ""
    _fail_at(
        path,
        tasks,
        ~running & np.isnan(end),
        "end_time",
        lambda r: (
            f"empty, but the attempt has status {r['status']!r} (an attempt that ended has an end)"
        ),
    )
    _fail_at(
        path,
        tasks,
        running & ~np.isnan(end),
        "status",
        lambda r: f"empty, but the attempt ended at {r['end_time']} (empty status = still running)",
    )
    _fail_at(
        path,
        tasks,
        end < start,
        "end_time",
        lambda r: f"{r['end_time']} is before the attempt's start_time {r['start_time']}",
    )
    duplicate = tasks.duplicated(ATTEMPT_KEYS, keep="first").to_numpy()
    _fail_at(
        path,
        tasks,
        duplicate,
        "attempt",
        lambda r: (
            f"attempt {r['attempt']} of task {r['task_id']!r} of job {r['job_id']!r} appears twice"
        ),
    )
    # attempts of a task, speculative copies aside, one after another: each starts at or
    # after the end of the one before (a running attempt never ends)
    plain = tasks[~tasks["speculative"].to_numpy()]
    ordered = plain.sort_values(["job_id", "task_id", "start_time", "attempt"], kind="stable")
    same_task = (ordered["job_id"].to_numpy()[1:] == ordered["job_id"].to_numpy()[:-1]) & (
        ordered["task_id"].to_numpy()[1:] == ordered["task_id"].to_numpy()[:-1]
    )
    previous_end = np.nan_to_num(ordered["end_time"].to_numpy()[:-1], nan=np.inf)
    overlaps = np.r_[False, same_task & (ordered["start_time"].to_numpy()[1:] < previous_end)]
    if overlaps.any():
        at = np.flatnonzero(overlaps)[0]
        before = ordered.iloc[at - 1]
        _fail_at(
            path,
            ordered,
            overlaps,
            "start_time",
            lambda r: (
                f"attempt {r['attempt']} of task {r['task_id']!r} of job {r['job_id']!r} "
                f"starts at {r['start_time']}, while its attempt {before['attempt']} (row "
                f"{int(before[ROW])}) runs until {before['end_time']}: attempts of a task may "
                f"not overlap unless marked speculative"
            ),
        )


def read_usage(path: Path | str, reserved: set[str]) -> pd.DataFrame:
    """The usage table, validated: ids as text, attempt int64, the window's times and every
    measurement float64 (available_from: window_end where not given), and `row`. A measurement
    column named like one of `reserved` (the converted file's own columns) is an error."""
    path = Path(path)
    frame = validate(_read_raw(path), "usage", path)
    measures = measurement_columns(frame.columns)
    clashing = [c for c in measures if c in reserved]
    if clashing:
        raise TaskTableError(
            f"{path}: column {clashing[0]}: the name is taken by a column the conversion makes "
            f"({', '.join(sorted(reserved & set(measures)))}); rename it"
        )
    out = pd.DataFrame(
        {
            "job_id": _ids(frame["job_id"]),
            "task_id": _ids(frame["task_id"]),
            "attempt": frame["attempt"].astype(np.int64),
            "window_start": frame["window_start"].astype(np.float64),
            "window_end": frame["window_end"].astype(np.float64),
        }
    )
    available = (
        pd.to_numeric(frame["available_from"]).astype(np.float64)
        if "available_from" in frame
        else pd.Series(np.nan, index=frame.index)
    )
    out["available_from"] = available.fillna(out["window_end"]).to_numpy()
    for column in measures:
        out[column] = pd.to_numeric(frame[column]).astype(np.float64)
    out[ROW] = np.arange(1, len(out) + 1)
    start = out["window_start"].to_numpy()
    _fail_at(
        path,
        out,
        out["window_end"].to_numpy() < start,
        "window_end",
        lambda r: f"{r['window_end']} is before the window's window_start {r['window_start']}",
    )
    _fail_at(
        path,
        out,
        out["available_from"].to_numpy() < start,
        "available_from",
        lambda r: f"{r['available_from']} is before the window's window_start {r['window_start']}",
    )
    return out.reset_index(drop=True)


def measurement_columns(columns) -> list[str]:
    return [c for c in columns if c not in USAGE_KEYS and c != ROW]
