"""docs/methods.md's parameter tables are generated from the methods' declarations
(stragglers.report.methods_docs): the committed page must be what the generator writes."""

from pathlib import Path

import pytest

from stragglers.report import methods_docs

PAGE = Path(__file__).resolve().parents[1] / "docs" / "methods.md"


def test_the_committed_tables_are_current():
    page = PAGE.read_text()
    assert page == methods_docs.with_tables(page), (
        "docs/methods.md is stale: python -m stragglers.report.methods_docs docs/methods.md"
    )


def test_every_method_and_parameter_has_its_row():
    tables = methods_docs.parameter_tables()
    for method, name, row in [
        ("| NURD (`nurd.py`) |", "alpha", "| `alpha` | `0.5` | a number in [0, 1] | calibration"),
        ("| PU-BG (`pu_bg.py`) |", "max_samples", "| `max_samples` | `1.0` | a number in (0, 1]"),
        ("| Grabit (`grabit.py`) |", "sigma", "| `sigma` | `null` | a number > 0 or null |"),
        ("| Wrangler-node (", "platt", "| `platt` | `training` | one of 'training', 'held_out' |"),
    ]:
        assert method in tables and row in tables, (name, tables)
    assert "| Elapsed, Oracle (`elapsed.py`, `oracle.py`) | no parameters |" in tables
    # the MTL models share their parameters: one set of rows for all of them
    assert tables.count("| `lam_tuple` |") == 1 and "MTL-f0, MTL-f0nl" in tables


def test_the_page_prose_is_kept_and_markers_are_required(tmp_path):
    page = (
        f"# Title\n\nprose\n\n{methods_docs.BEGIN}\nSTALE TABLE\n{methods_docs.END}\n\nmore prose\n"
    )
    written = methods_docs.with_tables(page)
    assert written.startswith("# Title\n\nprose\n\n") and written.endswith("\n\nmore prose\n")
    assert "STALE TABLE" not in written and "| NURD (`nurd.py`) |" in written
    path = tmp_path / "methods.md"
    path.write_text(page)
    methods_docs.main([str(path)])
    assert path.read_text() == written
    with pytest.raises(ValueError, match="methods.md: needs exactly one of each marker"):
        methods_docs.with_tables("# no markers\n", "methods.md")
