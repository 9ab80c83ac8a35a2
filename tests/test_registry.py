"""The method registry (stragglers.methods.registry): one mechanism for the online methods and
the launch-time models, the package's and those of `method_dirs`, with the same errors."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stragglers.launch.methods import (
    LAUNCH_METHODS,
    available_launch_methods,
    get_launch_method,
    launch_method_files,
    load_launch_method_dirs,
)
from stragglers.launch.methods.base import LaunchMethod
from stragglers.methods import (
    UnknownMethodError,
    available_methods,
    check_method_params,
    get_method,
    load_method_dirs,
    method_files,
)
from stragglers.methods.base import Method

TESTS = Path(__file__).parent
EXTRA = TESTS / "extra_methods"
PACKAGE = TESTS.parent / "stragglers"


def test_every_name_is_its_class():
    for name in available_methods():
        cls = get_method(name)
        assert cls.name == name and issubclass(cls, Method) and cls.family, name
    for name in available_launch_methods():
        cls = get_launch_method(name)
        assert cls.name == name and issubclass(cls, LaunchMethod), name


def test_backbone_methods_are_registered():
    assert {"NURD", "NURD-NC", "GBTR", "Oracle"} <= set(available_methods())
    assert {"MTL-f0", "Wrangler-node"} <= set(available_launch_methods())
    # helpers and the shared base of the MTL models are not methods
    assert not {"_MultiTask", ""} & set(available_launch_methods())


@pytest.mark.parametrize(
    "lookup,message",
    [
        (lambda: get_method("NoSuchMethod"), "^no method named 'NoSuchMethod'; available: .*NURD"),
        (
            lambda: get_launch_method("NoSuch"),
            "^no launch method named 'NoSuch'; available: .*MTL-f0",
        ),
        (lambda: check_method_params("NoSuchMethod", {}), "^no method named"),
    ],
)
def test_unknown_method_lists_the_available_ones(lookup, message):
    # one error for both registries: a KeyError for lookups, a ValueError for config checks
    with pytest.raises(UnknownMethodError, match=message) as error:
        lookup()
    assert isinstance(error.value, KeyError) and isinstance(error.value, ValueError)


def test_methods_from_a_folder():
    assert load_method_dirs([EXTRA]) == ["AlwaysFails"]
    assert get_method("AlwaysFails").family == "Test"
    assert load_method_dirs([EXTRA]) == ["AlwaysFails"]  # loading again is harmless
    assert set(method_files("AlwaysFails")) == {
        (EXTRA / "always_fails.py").resolve(),
        (PACKAGE / "methods" / "base.py").resolve(),
        # the protocol rules' definition: a method reads the rules it declares
        (PACKAGE / "formats" / "protocols.py").resolve(),
    }
    # the folder holds no launch-time model; the launch registry reads it all the same
    assert load_launch_method_dirs([EXTRA]) == []
    with pytest.raises(FileNotFoundError, match="method_dirs"):
        load_method_dirs([EXTRA / "missing"])


def test_launch_methods_from_a_folder(tmp_path):
    folder = tmp_path / "my_models"
    folder.mkdir()
    (folder / "always_no.py").write_text(
        "import numpy as np\n"
        "from stragglers.launch.methods.base import LaunchMethod\n\n\n"
        "class AlwaysNo(LaunchMethod):\n"
        "    name = 'AlwaysNo'\n\n"
        "    def fit(self, X, straggler, node, workload):\n"
        "        pass\n\n"
        "    def predict(self, X, node, workload):\n"
        "        return np.zeros(len(X), dtype=bool)\n"
    )
    try:
        assert load_launch_method_dirs([folder]) == ["AlwaysNo"]
        assert (
            get_launch_method("AlwaysNo")({}).predict(np.zeros((3, 1)), None, None).tolist()
            == [False] * 3
        )
        assert (folder / "always_no.py").resolve() in launch_method_files("AlwaysNo")
        assert load_method_dirs([folder]) == []  # not an online method
    finally:
        LAUNCH_METHODS._external.pop("AlwaysNo", None)


def test_a_name_taken_by_the_package_is_refused(tmp_path):
    (tmp_path / "nurd_again.py").write_text(
        "from stragglers.methods.base import Method\n\n\n"
        "class Again(Method):\n"
        "    name = 'NURD'\n\n"
        "    def predict(self, checkpoint):\n"
        "        return None\n"
    )
    with pytest.raises(RuntimeError, match=r"nurd_again.py: method name 'NURD' is already taken"):
        load_method_dirs([tmp_path])


def test_a_method_is_defined_by_its_module_and_what_it_builds_on():
    methods = PACKAGE / "methods"
    rules = PACKAGE / "formats" / "protocols.py"  # base.py's: the protocol rules a method reads
    # and the module of the gradient boosting it fits under `paper` (`lazy_modules`), with the
    # compiled kernel that module imports at its top
    assert method_files("NURD") == [
        rules,
        *(
            methods / f
            for f in (
                "_boosting_kernel.py",
                "_gradient_boosting.py",
                "_xgb_training.py",
                "base.py",
                "nurd.py",
            )
        ),
    ]
    # GBTR is NURD with another regressor: NURD's file defines it too
    assert method_files("GBTR") == [
        rules,
        *(
            methods / f
            for f in (
                "_boosting_kernel.py",
                "_gradient_boosting.py",
                "_xgb_training.py",
                "base.py",
                "gbtr.py",
                "nurd.py",
            )
        ),
    ]
    # the shared helpers a method's module (and its base classes') use, and the module the
    # PU methods' base class imports inside its functions (`lazy_modules`)
    assert set(method_files("PU-BG")) == {
        *(
            methods / f
            for f in (
                "_features.py",
                "_online.py",
                "_platt_svm.py",
                "_pu.py",
                "base.py",
                "pu_bg.py",
            )
        ),
        rules,
    }
    assert methods / "srquant.py" in method_files("LASER")
    # the modules a method imports only inside its functions (`lazy_modules`)
    assert methods / "_pyod_kernels.py" in method_files("SOS")
    assert methods / "_pyod_kernels.py" in method_files("CBLOF")
    assert methods / "_cox_breslow.py" in method_files("CoxPH")
    assert methods / "_robust_covariance.py" in method_files("MCD")
    assert {methods / "_pyod_kernels.py", methods / "_grown_forests.py"} <= set(
        method_files("XGBOD")
    )
    # and what those import at their top, read from their source: LSCP's lean LOFs come from
    # XGBOD's members' module, which imports the RBF kernel's
    assert {methods / "_xgbod_members.py", methods / "_rbf_kernel.py"} <= set(method_files("LSCP"))
    assert methods / "_grown_forests.py" not in method_files("IFOREST")
    assert PACKAGE / "launch" / "mtl.py" in launch_method_files("MTL-f0")
    # no registry: the package's __init__ lists every method
    for name in available_methods():
        assert all(p.name not in ("__init__.py", "registry.py") for p in method_files(name))


def test_a_methods_files_are_found_without_importing_its_libraries():
    """Reading the lazy modules' imports (`lazy_modules`) imports none of them: the
    workflow lists every method's files when it loads."""
    code = (
        "import sys\n"
        "from stragglers.methods import METHODS, method_files\n"
        "for name in METHODS.names():\n"
        "    method_files(name)\n"
        "heavy = [m for m in ('sklearn', 'pyod', 'numba', 'xgboost', 'torch') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PACKAGE.parent)
