"""What a suite's tasks need of its sandbox backend, checked when the suite loads: each
phase's network policy (``harness.network``: none, an allowlist, open egress, and a switch
of the agent's running sandbox between phases), services beside the agent's sandbox, root
graders. A task asking for more than the backend honours (``SandboxProvider.honours``) is
refused naming the task and the setting, before anything is built: never a run whose
sandboxes silently get another network."""

from __future__ import annotations

from harness.config.loader import ResolvedSuite, field_path, nearest_line
from harness.config.service_files import check_service_files
from harness.config.step_grading import graded_views
from harness.errors import ConfigError
from harness.network import Phase, phases


def check(config: ResolvedSuite, backend: str, modes: frozenset[str]) -> None:
    """Refuse a task whose agent or grading sandbox needs a network policy the backend
    cannot honour (``harness.network``), or services beside it, naming the task and the
    setting, before anything is built: never a run whose sandboxes silently get another
    network."""
    for loaded in config.tasks:
        task = loaded.task
        env = config.environments.get(task.environment or "")
        if env is None:
            continue
        if (env.spec.services or env.spec.volumes) and "services" not in modes:
            loc = (*loaded.prefix, "environment")
            raise ConfigError(
                str(loaded.file),
                field_path(loc),
                f"task '{task.id}': environment '{env.name}' has services beside the "
                f"agent's sandbox, which sandbox '{backend}' cannot start; use "
                "`--sandbox docker`",
                nearest_line(loaded.lines, loc) or loaded.line,
            )
        check_service_files(loaded, env)
        for at, view in graded_views(task):
            if view.grading.root and "grader-root" not in modes:
                loc = (*loaded.prefix, *at, "grading", "root")
                raise ConfigError(
                    str(loaded.file),
                    field_path(loc),
                    f"task '{task.id}': its grader needs root capabilities, which sandbox "
                    f"'{backend}' cannot give; use `--sandbox docker`",
                    nearest_line(loaded.lines, loc) or loaded.line,
                )
        for phase in phases(config.environments, task):
            loc = (*loaded.prefix, *phase.where)
            if (why := _refusal(phase, modes, backend)) is not None:
                raise ConfigError(
                    str(loaded.file),
                    field_path(loc),
                    f"task '{task.id}': {why}; use `--sandbox docker`",
                    nearest_line(loaded.lines, loc) or loaded.line,
                )


def _refusal(phase: Phase, modes: frozenset[str], backend: str) -> str | None:
    """Why ``backend`` cannot give this phase its network, or None."""
    said = phase.policy.describe()
    if phase.switched and "switch-network" not in modes:
        return (
            f"its {phase.key} phase needs the agent's running sandbox switched to another "
            f"network ({said}), which sandbox '{backend}' cannot do"
        )
    if phase.policy.mode not in modes:
        what = "open egress" if phase.policy.mode == "open" else "an egress allowlist"
        return (
            f"its {phase.key} sandbox needs {what} ({said}), which sandbox '{backend}' "
            "cannot honour"
        )
    return None
