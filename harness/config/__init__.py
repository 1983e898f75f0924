"""Configuration: typed models and the loader that turns YAML into them."""

from harness.config.loader import LoadedTask, ResolvedSuite, load_suite, load_task_file
from harness.config.models import Arm, Budgets, EnvironmentSpec, Suite, Task

__all__ = [
    "Arm",
    "Budgets",
    "EnvironmentSpec",
    "LoadedTask",
    "ResolvedSuite",
    "Suite",
    "Task",
    "load_suite",
    "load_task_file",
]
