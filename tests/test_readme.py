"""The user's guide stays a guide: README length, no project history, a configuration page
generated from the schema that is complete and current."""

import re

import pytest
from workflow_runs import ROOT

from stragglers.report import config_docs

README_MAX_LINES = 300

# Phrases that tell the project's history ("this round", "was 5 min before", "now 10 jobs").
# Each pattern names the past of the project, not a past tense in general: "was" only next to
# a project noun or a number, "now" only as "now <verb/number>" or "is now", so "known",
# "snowflake" or "a task that was killed" do not trip it.
HISTORY_PATTERNS = {
    "this round": r"\bthis round\b",
    "was (about the project)": (
        r"\b(?:it|this|the (?:run|default run|pipeline|table|figure|readme|code|method|"
        r"conversion|test suite|suite|config))\s+(?:was|were)\b|\b(?:was|were)\s+~?\d"
    ),
    "before / earlier (a former state)": (
        r"\b(?:before|earlier)\s*(?:this|the|that)\s+(?:change|round|fix|commit|issue|refactor|"
        r"move|version)\b|\b(?:than|as)\s+before\b|\b(?:instead of|from)\s+\S+\s+before\b|"
        r"\bearlier (?:runs?|versions?|states?|rounds?|code)\b"
    ),
    "now (contrast with the past)": r"\b(?:is|are)\s+now\b|\bnow\s+(?:\d|takes|runs|is|has|uses)",
    "used to": r"\bused to\b",
    "no longer": r"\bno longer\b",
}


def history_phrases(text: str) -> list[str]:
    """(label: line) for every line of `text` that describes the project's past."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for label, pattern in HISTORY_PATTERNS.items():
            if re.search(pattern, line, flags=re.IGNORECASE):
                found.append(f"{label}: line {number}: {line.strip()}")
    return found


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_readme_has_no_history():
    found = history_phrases((ROOT / "README.md").read_text())
    assert not found, "README.md describes history (it goes to CHANGELOG.md):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "text",
    [
        "This round the conversion is split.",
        "The default run was 7 min 49 s.",
        "It was slower than before.",
        "The suite now takes 15 min.",
        "Conversion is now 10 jobs instead of 2.",
        "The table no longer has a `note` column.",
        "Earlier runs reported 0.61.",
    ],
)
def test_history_check_catches_history(text):
    assert history_phrases(text), text


@pytest.mark.parametrize(
    "text",
    [
        "A task that was killed is relaunched from its flag time.",
        "Flags raised before tau count as early.",
        "The known stragglers finished earlier than the threshold.",
        "Jobs that had ended before t are listed.",
        "Open results/findings.md first.",
    ],
)
def test_history_check_allows_ordinary_uses(text):
    assert not history_phrases(text), text


def test_readme_keeps_the_ci_commands():
    """.ci/run installs and tests "exactly as the README says": its commands are in it."""
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    commands = [
        line.split("&& ", 1)[1] if line.startswith(". .venv") else line
        for line in ci.splitlines()
        if line and not line.startswith(("#", "set ", "cd ", "rm "))
    ]
    assert len(commands) == 5, commands
    for command in commands:
        assert command in readme, f".ci/run's command not in README.md: {command}"


def test_every_schema_key_is_documented():
    assert config_docs.undocumented(config_docs.load_schema()) == []


def test_undocumented_key_is_found():
    schema = {"properties": {"a": {"description": "x", "properties": {"b": {"type": "integer"}}}}}
    assert config_docs.undocumented(schema) == ["a.b"]


def test_configuration_page_is_current():
    page = (ROOT / "docs" / "configuration.md").read_text()
    assert page == config_docs.configuration_markdown(), (
        "docs/configuration.md is stale: python -m stragglers.report.config_docs "
        "> docs/configuration.md"
    )


def test_configuration_page_lists_every_setting():
    page = (ROOT / "docs" / "configuration.md").read_text()
    names = [name for name, _ in config_docs.settings(config_docs.load_schema())]
    assert "simulation.policies.kill_delay" in names and "datasets.<name>.kind" in names
    for name in names:
        assert f"| `{name}` |" in page, name


def test_readme_findings_quote_the_run():
    """The README's "What it finds" numbers are the default run's results/findings.md (CI
    runs the pipeline before the tests; skipped when no run made the page)."""
    page = ROOT / "results" / "findings.md"
    if not page.exists():
        pytest.skip("no results/findings.md: run snakemake --cores 2 first")
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## What it finds", 1)[1].split("\n## ", 1)[0]
    numbers = re.findall(r"-?\d+\.\d{3}", section)
    assert len(numbers) >= 10
    missing = [n for n in numbers if n not in page.read_text()]
    assert not missing, f"README quotes numbers results/findings.md does not hold: {missing}"
