"""Launch-time models: one module per model, each a `LaunchMethod` subclass
(stragglers.launch.methods.base) that sets `name`, found by the same registry as the online
methods (stragglers.methods.registry), with the same errors and `method_dirs`."""

from __future__ import annotations

from stragglers.launch.methods.base import LaunchMethod
from stragglers.methods.registry import Registry

LAUNCH_METHODS = Registry(__name__, LaunchMethod, "launch method")
available_launch_methods = LAUNCH_METHODS.names
get_launch_method = LAUNCH_METHODS.get
check_launch_params = LAUNCH_METHODS.check_params
load_launch_method_dirs = LAUNCH_METHODS.load_dirs
launch_method_files = LAUNCH_METHODS.source_files
