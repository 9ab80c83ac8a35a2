"""The workflow through a real SLURM cluster: snakemake-executor-plugin-slurm submits every
job with sbatch to the one-node cluster that workflow/profiles/slurm/local/up.sh starts on
this machine (docs/cluster.md). While the run goes, a running prediction job is cancelled
with scancel: Snakemake must report it (rule and SLURM log) and the profile's retry must
complete it; the outputs must then equal the session's local run of the same config
(tests/configs/tiny/config.yaml, tests/workflow_runs.py), wall-time columns aside.

Needs root and Debian's slurm-wlm and munge (up.sh installs them). Without them the test is
skipped with the reason, unless STRAGGLERS_REQUIRE_SLURM=1 (set by .ci/run): then it fails.
Cost here (2 cores, shared, load average 7-8): 491 s wall, 401 s of it the SLURM run
(docs/cluster.md); plus apt-get on a machine without the packages.
"""

import os
import re
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_cluster_generic import TARGET_ONLY_RULES, comparable
from workflow_runs import ROOT, RUN_TIMEOUT_S, snakemake_command

LOCAL_CLUSTER = ROOT / "workflow" / "profiles" / "slurm" / "local"
PROFILES = ["workflow/profiles/slurm", "workflow/profiles/slurm-local"]

pytestmark = pytest.mark.e2e

# SLURM_CONF as the test session found it (conftest.py changes it once the session starts)
ORIGINAL_SLURM_CONF = os.environ.get("SLURM_CONF")

SUBMITTED = re.compile(r"has been submitted with SLURM jobid (\d+) \(log: (\S+)\)")


def unavailable(reason: str) -> None:
    """Skip with the reason, or fail when the run must have SLURM (CI)."""
    if os.environ.get("STRAGGLERS_REQUIRE_SLURM") == "1":
        pytest.fail(f"STRAGGLERS_REQUIRE_SLURM=1 but SLURM cannot run here: {reason}")
    pytest.skip(reason)


def controller_answers() -> bool:
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return False
    return "UP" in ping.stdout


@pytest.fixture(scope="module")
def machine_slurm_conf():
    """The machine's own SLURM client config (conftest.py points the other tests at one that
    fails fast), for the daemons up.sh starts and every client this module runs."""
    with pytest.MonkeyPatch.context() as patch:
        if ORIGINAL_SLURM_CONF is None:
            patch.delenv("SLURM_CONF", raising=False)
        else:
            patch.setenv("SLURM_CONF", ORIGINAL_SLURM_CONF)
        yield


@pytest.fixture(scope="module")
def slurm_cluster(machine_slurm_conf):
    """The local cluster, started for this module (and stopped after it, unless it was
    already running: a developer's cluster is left as found)."""
    if os.geteuid() != 0:
        unavailable("not root: up.sh installs slurm-wlm and munge and starts their daemons")
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        unavailable("snakemake-executor-plugin-slurm is not installed (pip install -e '.[test]')")
    was_running = controller_answers()
    up = subprocess.run(
        [str(LOCAL_CLUSTER / "up.sh")], capture_output=True, text=True, timeout=1200
    )
    if up.returncode != 0:
        unavailable(f"up.sh could not start SLURM:\n{up.stdout[-2000:]}{up.stderr[-3000:]}")
    print(up.stdout)
    yield
    if not was_running:
        subprocess.run([str(LOCAL_CLUSTER / "down.sh")], check=True, timeout=300)


def running_prediction_job(run: subprocess.Popen, workdir: Path, deadline: float) -> str:
    """The SLURM id of a prediction job (alone or a `predict` group) of the run in `workdir`
    once it runs (its SLURM log is under workdir: other runs may share the cluster)."""
    while time.monotonic() < deadline:
        assert run.poll() is None, "the SLURM run ended before a prediction job ran"
        queue = subprocess.run(
            ["squeue", "--noheader", "--states=RUNNING", "--format=%i|%k"],
            capture_output=True,
            text=True,
            check=True,
        )
        for line in queue.stdout.splitlines():
            job_id, comment = line.strip().split("|", 1)
            if comment.startswith("rule_predict") and Path(
                slurm_job(job_id)["StdOut"]
            ).is_relative_to(workdir):
                return job_id
        time.sleep(0.2)
    raise AssertionError("no prediction job ran on SLURM in time")


def rules_run(snakemake_output: str) -> set[str]:
    """The rules of Snakemake's "Job stats" table (between its header and `total`)."""
    table = snakemake_output.split("Job stats:", 1)[1].split("\ntotal", 1)[0]
    return {line.split()[0] for line in table.splitlines()[3:] if line.strip()}


def submitted_as(slurm_log: Path) -> str:
    """The rule a submitted job ran, from its SLURM log's folder (the plugin writes
    .snakemake/slurm_logs/rule_<rule>/<wildcards>/<id>.log, group_<group>_<group>/<id>.log)."""
    folder = slurm_log.parts[slurm_log.parts.index("slurm_logs") + 1]
    kind, name = folder.split("_", 1)
    return name if kind == "rule" else "group " + name.split("_", 1)[0]


def profile_groups() -> dict[str, set[str]]:
    """The rules of each group of workflow/profiles/slurm (`groups: [rule=group, ...]`)."""
    profile = yaml.safe_load((ROOT / PROFILES[0] / "config.yaml").read_text())
    groups: dict[str, set[str]] = {}
    for entry in profile.get("groups", []):
        rule, group = entry.split("=")
        groups.setdefault(group, set()).add(rule)
    return groups


def slurm_job(job_id: str) -> dict[str, str]:
    """`scontrol show job` as a dict (finished jobs stay for MinJobAge, 3600 s here)."""
    shown = subprocess.run(
        ["scontrol", "--oneliner", "show", "job", job_id],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(word.split("=", 1) for word in shown.stdout.split() if "=" in word)


def test_workflow_on_slurm_recovers_a_cancelled_job_and_equals_local_run(
    tmp_path, slurm_cluster, tiny_config, reference_run
):
    cluster, log_path = tmp_path / "cluster", tmp_path / "slurm-run.log"
    # in the working directory, as the reference run's: the findings quote its relative path
    config = tiny_config(cluster / "config.yaml")
    started = time.monotonic()
    # the SLURM run first: the session's local run goes side by side with it (another worker's
    # test starts it) while this one mostly waits for the queue and its status polls
    with log_path.open("w") as log:
        slurm_run = subprocess.Popen(
            snakemake_command(
                cluster, config, *(arg for p in PROFILES for arg in ("--profile", p))
            ),
            cwd=ROOT,  # the profiles' paths are relative to the repository
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            cancelled = running_prediction_job(slurm_run, cluster, deadline=started + 900)
            subprocess.run(["scancel", cancelled], check=True)
            returncode = slurm_run.wait(timeout=RUN_TIMEOUT_S)
        finally:
            if slurm_run.poll() is None:
                slurm_run.terminate()
                slurm_run.wait(timeout=60)
    output = log_path.read_text()
    print(f"SLURM run: {time.monotonic() - started:.0f} s wall; cancelled SLURM job {cancelled}")
    assert returncode == 0, output[-8000:]
    reference = reference_run()
    reference.check()
    local, local_output = reference.workdir, reference.log

    # the cancelled job is reported as failed with its rule (or group) and its SLURM log, then
    # retried (the profile's retries: 1); SLURM itself says it was cancelled
    assert slurm_job(cancelled)["JobState"] == "CANCELLED"
    submissions = {job_id: Path(log) for job_id, log in SUBMITTED.findall(output)}
    cancelled_log = submissions[cancelled]
    error = re.search(r"Error in (group|rule) predict:?\n(.*\n){0,3}?\s*log: (\S+)", output)
    assert error and error[3] == str(cancelled_log), output[-8000:]
    assert submitted_as(cancelled_log) in {"group predict", "predict"}
    retried = [j for j, log in submissions.items() if log.parent == cancelled_log.parent]
    assert len(retried) >= 2 and max(retried, key=int) != cancelled

    # every rule type that is not a target was submitted through sbatch (the rules of the
    # profile's groups inside group jobs), with the resources the rule declares
    # (generate_trace: mem_mb=1792, runtime=5 in workflow/rules/data.smk)
    groups = profile_groups()
    submitted_rules = set()
    for log in submissions.values():
        name = submitted_as(log)
        submitted_rules |= groups[name.split()[1]] if name.startswith("group ") else {name}
    assert submitted_rules == rules_run(local_output) - TARGET_ONLY_RULES
    generate = next(j for j, log in submissions.items() if submitted_as(log) == "generate_trace")
    declared = slurm_job(generate)
    assert declared["TimeLimit"] == "00:05:00" and declared["MinMemoryNode"] == "1792M"
    assert declared["Partition"] == "local"

    # same outputs as the local run
    outputs = sorted(p.relative_to(local) for p in (local / "results").rglob("*") if p.is_file())
    assert any(p.name == "table3.csv" for p in outputs)
    datasets = yaml.safe_load(config.read_text())["datasets"]
    assert sum(p.name == "job_metrics.csv" for p in outputs) == len(datasets)
    for relative in outputs:
        if relative.suffix == ".png" or relative.name.startswith("cost."):
            continue  # figures' bytes carry no data beyond the CSVs; cost tables are wall time
        expected, actual = comparable(local / relative), comparable(cluster / relative)
        if isinstance(expected, pd.DataFrame):
            pd.testing.assert_frame_equal(actual, expected, obj=str(relative))
        else:
            assert actual == expected, relative
