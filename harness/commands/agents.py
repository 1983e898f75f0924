"""Commands about the ready-made agents: `harness agents stage` fetches their CLIs ahead.

A run with a ``claude-code`` or ``codex`` arm installs the pinned CLI from the npm registry
into a host cache on first use (on Docker when it builds the CLI into the task's image,
before the run starts); staging it beforehand (on a CI machine, or before a run that must not
wait on the network) puts the same pinned bytes into that cache.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

agents = typer.Typer(help="The ready-made agents (Claude Code, Codex CLI).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(agents, name="agents")


@agents.command()
def stage(
    names: Annotated[
        Optional[list[str]],  # noqa: UP045 - typer needs Optional
        typer.Argument(
            metavar="NAME",
            help="Agents to stage (default: every ready-made agent).",
            show_default=False,
        ),
    ] = None,
    version: Annotated[
        Optional[str],  # noqa: UP045 - typer needs Optional
        typer.Option(
            metavar="VERSION", help="CLI version instead of the pinned one (one agent only)."
        ),
    ] = None,
) -> None:
    """Install the pinned CLI of each ready-made agent into $HARNESS_CLI_CACHE."""
    from harness.agents.npm_stage import stage as stage_package
    from harness.errors import ConfigError

    ready = ready_made()
    chosen = names or sorted(ready)
    unknown = [n for n in chosen if n not in ready]
    if unknown:
        raise ConfigError(
            "command line",
            "names",
            f"not a ready-made agent: {', '.join(unknown)} (known: {', '.join(sorted(ready))})",
        )
    if version is not None and len(chosen) != 1:
        raise ConfigError("command line", "--version", "name exactly one agent with --version")
    for name in chosen:
        cls = ready[name]
        package = cls().package(version or cls.VERSION)
        exe = stage_package(package)
        typer.echo(f"{name}: {package.label} {package.version} ({package.spec}) at {exe}")


def ready_made() -> dict:
    """Agent name → class, for the registered agents that install a pinned CLI."""
    from harness.agents import AGENTS, agent_class

    classes = {name: agent_class(name) for name in AGENTS}
    return {name: cls for name, cls in classes.items() if hasattr(cls, "package")}
