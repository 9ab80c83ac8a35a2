"""The lock (requirements.lock) agrees with pyproject.toml and environment.yml: every runtime
and `test` dependency is pinned at a version its specifier admits, environment.yml names the
same versions, and torch is the CPU build with no CUDA packages beside it. No network."""

import re
import tomllib

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from workflow_runs import ROOT

# xgboost requires nvidia-nccl-cu12 on Linux (its own metadata), whatever torch is; every other
# CUDA package would come with torch's CUDA build
ALLOWED_CUDA = {"nvidia-nccl-cu12"}
CUDA_PREFIXES = ("nvidia-", "triton", "cuda-")

# environment.yml's conda names for PyPI projects; python and pip are the environment itself
CONDA_NAMES = {
    "python-isal": "isal",
    "python-fastjsonschema": "fastjsonschema",
    "snakemake-minimal": "snakemake",
}
CONDA_SKIP = {"python", "pip"}


def lock_pins(text: str) -> tuple[dict[str, str], list[str]]:
    """(canonical name -> pinned version, problems) of a lock's text: one exact `==` pin a line."""
    pins, problems = {}, []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            req = Requirement(line)
        except ValueError as err:
            problems.append(f"line {number}: not a requirement: {line} ({err})")
            continue
        specs = list(req.specifier)
        if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
            problems.append(f"line {number}: not one exact == pin: {line}")
            continue
        name = canonicalize_name(req.name)
        if name in pins:
            problems.append(f"line {number}: {name} pinned twice")
        pins[name] = specs[0].version
    return pins, problems


def pyproject_requirements(text: str) -> list[Requirement]:
    """The runtime and `test` dependencies of a pyproject.toml (not the `reference` extra)."""
    project = tomllib.loads(text)["project"]
    return [
        Requirement(spec)
        for spec in project["dependencies"] + project["optional-dependencies"]["test"]
    ]


def environment_pins(text: str) -> dict[str, str]:
    """PyPI name -> the spec environment.yml gives it (conda and pip sections)."""
    specs = {}
    for entry in yaml.safe_load(text)["dependencies"]:
        for item in entry["pip"] if isinstance(entry, dict) else [entry]:
            if item.startswith("-"):  # a pip option line (--extra-index-url)
                continue
            if not isinstance(entry, dict):  # conda: name==version, name=version (= x.*), name>=...
                name = re.split(r"[=<>!~ ]", item, maxsplit=1)[0]
                if name in CONDA_SKIP:
                    continue
                spec = item[len(name) :].strip()
                if re.fullmatch(r"=[^=].*", spec):
                    spec = f"={spec}.*"
                item = CONDA_NAMES.get(name, name) + spec
            req = Requirement(item)
            specs[canonicalize_name(req.name)] = str(req.specifier)
    return specs


def lock_problems(lock: str, pyproject: str, environment: str) -> list[str]:
    """Every way the three files disagree, or the lock lets the CUDA build of torch in."""
    pins, problems = lock_pins(lock)
    for req in pyproject_requirements(pyproject):
        if req.marker is not None and not req.marker.evaluate():
            continue
        name = canonicalize_name(req.name)
        if name not in pins:
            problems.append(f"pyproject's {req} is not in the lock")
        elif not req.specifier.contains(pins[name], prereleases=True):
            problems.append(f"the lock's {name}=={pins[name]} does not satisfy pyproject's {req}")
    if "torch" in pins and Version(pins["torch"]).local != "cpu":
        problems.append(f"the lock's torch=={pins['torch']} is not the CPU build (+cpu)")
    for name in sorted(pins):
        if name.startswith(CUDA_PREFIXES) and name not in ALLOWED_CUDA:
            problems.append(f"the lock holds CUDA package {name}=={pins[name]}")
    environment_specs = environment_pins(environment)
    for req in pyproject_requirements(pyproject):
        name = canonicalize_name(req.name)
        if name not in environment_specs:
            problems.append(f"environment.yml lacks pyproject's {name}")
    for name, spec in environment_specs.items():
        if name not in pins:
            problems.append(f"environment.yml's {name}{spec} is not in the lock")
        elif spec != f"=={pins[name]}":
            problems.append(f"environment.yml's {name}{spec} is not the lock's =={pins[name]}")
    return problems


def read(name: str) -> str:
    return (ROOT / name).read_text()


def test_lock_agrees_with_pyproject_and_environment():
    problems = lock_problems(
        read("requirements.lock"), read("pyproject.toml"), read("environment.yml")
    )
    assert not problems, "\n".join(problems)


def test_lock_pins_the_whole_install():
    """Beyond the direct dependencies: the packages they pull in are pinned too."""
    pins, _ = lock_pins(read("requirements.lock"))
    assert len(pins) > 2 * len(pyproject_requirements(read("pyproject.toml")))
    for name in ("setuptools", "joblib", "threadpoolctl", "sympy", "nvidia-nccl-cu12"):
        assert name in pins, name


def replaced(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


@pytest.mark.parametrize(
    "file, old, new",
    [
        ("requirements.lock", "numpy==2.4.6\n", ""),  # a dependency left out
        ("requirements.lock", "pandas==2.3.3", "pandas==3.0.0"),  # outside pyproject's <3
        ("requirements.lock", "pytest-xdist==3.8.0\n", ""),  # a test dependency left out
        ("requirements.lock", "torch==2.13.0+cpu", "torch==2.13.0"),  # the CUDA build
        ("requirements.lock", "torch==2.13.0+cpu", "torch==2.13.0+cu130"),
        ("requirements.lock", "torch==2.13.0+cpu", "torch==2.13.0+cpu\nnvidia-cublas-cu12==12.9.1"),
        ("requirements.lock", "scipy==1.17.1", "scipy>=1.17"),  # not a pin
        ("environment.yml", "scipy==1.17.1", "scipy==1.17.0"),  # environment.yml differs
        ("environment.yml", "python-isal==1.9.1", "python-isal>=1.6"),
        ("environment.yml", "      - pulearn==0.2.0\n", ""),  # environment.yml lacks one
        ("pyproject.toml", '"numpy>=1.26"', '"numpy>=3"'),  # the pin outside a new specifier
    ],
)
def test_a_disagreement_is_found(file, old, new):
    texts = {
        name: read(name) for name in ("requirements.lock", "pyproject.toml", "environment.yml")
    }
    texts[file] = replaced(texts[file], old, new)
    problems = lock_problems(
        texts["requirements.lock"], texts["pyproject.toml"], texts["environment.yml"]
    )
    assert problems, (file, old, new)
