"""Launch-time, cross-job straggler prediction (Wrangler and its multi-task models): before a
task is placed, its machine's state predicts whether it will straggle; models learn from the
tasks of jobs that finished earlier. `tasks` builds the rows, `protocol` the temporal splits
and the online replay, `methods/` the models, `simulate` the hold-back mitigation."""


def launch_datasets(config: dict) -> list[str]:
    """Datasets the launch stage runs on: `launch.datasets`, else every dataset whose kind has
    machine state (light: the workflow calls it when it loads)."""
    from stragglers.formats.datasets import machine_state_columns

    launch = config.get("launch") or {}
    if not launch.get("methods"):
        return []
    if "datasets" in launch:
        unknown = sorted(set(launch["datasets"]) - set(config["datasets"]))
        if unknown:
            raise ValueError(f"launch.datasets: {unknown} are not datasets of the config")
        return list(launch["datasets"])
    return [
        name for name, spec in config["datasets"].items() if machine_state_columns(spec["kind"])
    ]
