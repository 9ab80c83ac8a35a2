"""Streaming read of a CSV member of a gzipped tarball, on small archives built here."""

from __future__ import annotations

import gzip
import io
import tarfile

import numpy as np
import pandas as pd
import pytest

from stragglers.formats.raw import ALIBABA_2017_BATCH_INSTANCE, ALIBABA_2018_BATCH_INSTANCE
from stragglers.traces.tarstream import TarStreamError, iter_tar_csv


def _rows_2018(n_rows: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n_rows):
        start = int(rng.integers(0, 10_000))
        end = start + int(rng.integers(1, 500))
        usage = ",".join(f"{value:.3f}" for value in rng.random(4))
        lines.append(
            f"ins_{i},task_{i % 7},j_{i % 3},1,Terminated,{start},{end},m_{i % 11},1,1,{usage}\n"
        )
    return "".join(lines).encode()


def _make_tar(path, members: dict[str, bytes], compress: bool = True) -> None:
    with tarfile.open(path, "w:gz" if compress else "w") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


@pytest.mark.parametrize("engine", ["pyarrow", "c"])
def test_reads_member_in_bounded_chunks_matching_a_direct_parse(tmp_path, engine):
    payload = _rows_2018(1_003, seed=1)
    tar_path = tmp_path / "batch_instance.tar.gz"
    _make_tar(tar_path, {"README": b"not csv\n", "data/batch_instance.csv": payload})

    chunks = list(
        iter_tar_csv(
            tar_path,
            "batch_instance.csv",
            ALIBABA_2018_BATCH_INSTANCE,
            chunk_rows=100,
            engine=engine,
        )
    )

    assert [len(c) for c in chunks] == [100] * 10 + [3]
    combined = pd.concat(chunks, ignore_index=True)
    expected = pd.read_csv(io.BytesIO(payload), header=None, names=ALIBABA_2018_BATCH_INSTANCE)
    pd.testing.assert_frame_equal(combined, expected)
    assert list(combined.columns) == ALIBABA_2018_BATCH_INSTANCE


def test_last_line_without_newline_and_gzipped_member(tmp_path):
    rows = [
        f"{t},{t + 5},{j},{j * 10},m{j},Terminated,1,1,0.5,0.2,0.3,0.1"
        for j, t in enumerate(range(0, 50, 10))
    ]
    payload = ("\n".join(rows)).encode()  # no final newline
    tar_path = tmp_path / "alibaba-trace-2017.tar.gz"
    _make_tar(tar_path, {"trace/batch_instance.csv.gz": gzip.compress(payload)})

    frames = list(
        iter_tar_csv(tar_path, "batch_instance.csv.gz", ALIBABA_2017_BATCH_INSTANCE, chunk_rows=2)
    )

    combined = pd.concat(frames, ignore_index=True)
    assert len(combined) == 5
    assert combined["job_id"].tolist() == [0, 1, 2, 3, 4]
    assert combined["start_time"].tolist() == [0, 10, 20, 30, 40]


def test_wrong_column_count_names_member_and_line(tmp_path):
    good = _rows_2018(25, seed=2).splitlines(keepends=True)
    good[16] = good[16].replace(b",Terminated", b"")  # line 17 has 13 fields
    tar_path = tmp_path / "t.tar.gz"
    _make_tar(tar_path, {"batch_instance.csv": b"".join(good)})

    reader = iter_tar_csv(
        tar_path, "batch_instance.csv", ALIBABA_2018_BATCH_INSTANCE, chunk_rows=10
    )
    first = next(reader)  # lines 1-10 are fine
    assert len(first) == 10
    expected_message = r"t\.tar\.gz:batch_instance\.csv line 17: expected 14 columns, found 13"
    with pytest.raises(TarStreamError, match=expected_message):
        next(reader)


def test_extra_column_and_quoted_field_are_checked(tmp_path):
    names = ["a", "b", "c"]
    tar_path = tmp_path / "q.tar.gz"
    _make_tar(tar_path, {"x.csv": b'1,"two, with comma",3\n4,5,6,7\n'})
    with pytest.raises(TarStreamError, match=r"x\.csv line 2: expected 3 columns, found 4"):
        list(iter_tar_csv(tar_path, "x.csv", names))

    ok_path = tmp_path / "ok.tar.gz"
    _make_tar(ok_path, {"x.csv": b'1,"two, with comma",3\n'})
    (frame,) = list(iter_tar_csv(ok_path, "x.csv", names))
    assert frame.loc[0, "b"] == "two, with comma"


def test_blank_line_is_an_error(tmp_path):
    tar_path = tmp_path / "b.tar.gz"
    _make_tar(tar_path, {"x.csv": b"1,2\n\n3,4\n"})
    with pytest.raises(TarStreamError, match=r"line 2: expected 2 columns, found 1"):
        list(iter_tar_csv(tar_path, "x.csv", ["a", "b"]))


def test_truncated_gzip_archive_is_an_error_naming_the_member(tmp_path):
    # Incompressible payload, so cutting the .gz in half cuts the member's data.
    rng = np.random.default_rng(3)
    payload = "".join(f"{i},{v}\n" for i, v in enumerate(rng.random(40_000))).encode()
    whole = tmp_path / "whole.tar.gz"
    _make_tar(whole, {"big/batch_instance.csv": payload})
    data = whole.read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[: len(data) // 2])

    rows_before_error = 0
    expected_message = (
        r"cut\.tar\.gz:big/batch_instance\.csv: archive truncated or corrupt after line \d+"
    )
    with pytest.raises(TarStreamError, match=expected_message):
        for frame in iter_tar_csv(cut, "batch_instance.csv", ["i", "v"], chunk_rows=5_000):
            rows_before_error += len(frame)
    assert 0 < rows_before_error < 40_000
    # The whole archive reads completely.
    frames = iter_tar_csv(whole, "batch_instance.csv", ["i", "v"], chunk_rows=5_000)
    total = sum(len(frame) for frame in frames)
    assert total == 40_000


def test_archive_cut_inside_the_header_is_an_error(tmp_path):
    whole = tmp_path / "whole.tar.gz"
    _make_tar(whole, {"batch_instance.csv": b"1,2\n"})
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(whole.read_bytes()[:15])
    expected_message = r"cut\.tar\.gz: archive unreadable, truncated or corrupt"
    with pytest.raises(TarStreamError, match=expected_message):
        list(iter_tar_csv(cut, "batch_instance.csv", ["a", "b"]))


def test_missing_member_lists_what_was_there(tmp_path):
    tar_path = tmp_path / "m.tar.gz"
    _make_tar(tar_path, {"batch_task.csv": b"1,2\n"})
    expected_message = r"no member ends with 'batch_instance\.csv'.*batch_task\.csv"
    with pytest.raises(TarStreamError, match=expected_message):
        list(iter_tar_csv(tar_path, "batch_instance.csv", ["a", "b"]))


def test_plain_tar_and_bad_arguments(tmp_path):
    tar_path = tmp_path / "p.tar"
    _make_tar(tar_path, {"x.csv": b"1,2\n3,4\n"}, compress=False)
    (frame,) = list(iter_tar_csv(tar_path, "x.csv", ["a", "b"]))
    assert frame["b"].tolist() == [2, 4]
    with pytest.raises(ValueError, match="chunk_rows"):
        list(iter_tar_csv(tar_path, "x.csv", ["a", "b"], chunk_rows=0))
    with pytest.raises(ValueError, match="engine"):
        list(iter_tar_csv(tar_path, "x.csv", ["a", "b"], engine="python"))
    with pytest.raises(FileNotFoundError, match="absent.tar.gz"):
        list(iter_tar_csv(tmp_path / "absent.tar.gz", "x.csv", ["a", "b"]))
