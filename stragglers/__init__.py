"""Online straggler prediction: trace conversion, online replay, methods, evaluation."""

__version__ = "0.1.0"


def flat_api(package: str, modules: tuple[str, ...]):
    """The `__getattr__` (PEP 562) of a stage package with a flat API: a submodule imports as
    such; any other public name is looked up in `modules`, in order, on first use, so that
    importing one submodule (the workflow loads some when it reads the rules) imports no more
    than it needs."""
    import importlib
    import importlib.util

    def __getattr__(name: str):
        if importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")
        if not name.startswith("_"):
            for module in modules:
                found = importlib.import_module(f"{package}.{module}")
                if name in vars(found):
                    return vars(found)[name]
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
