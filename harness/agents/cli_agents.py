"""Ready-made agents: Claude Code (``claude-code``) and Codex CLI (``codex``).

Each is the ``command`` agent with the program filled in: the official CLI, at a pinned
version from the npm registry (``harness.agents.npm_stage``), run headless with the task's
instruction as its prompt, the task's workdir as its cwd, every permission prompt off (the
sandbox is the boundary), and its final message as the answer. The model is reached only
through the metering proxy: Claude Code through ``ANTHROPIC_BASE_URL`` (the arm's
``model.api: anthropic``), Codex through ``OPENAI_BASE_URL`` with the Responses API
(``model.api: openai``). Tokens, cost, budgets, the real key and the trajectory work exactly
as for ``command``.

On Docker the executable is built into the task's image at image-build time (``build``:
one image per environment and CLI build, pinned beside the task image and recorded in the
lock file) and runs from there inside the network-less container. On ``bwrap`` the staged
executable is bound read-only at the same path inside the network-less sandbox (pinned in
the lock file by its SHA-256). Only ``unsafe-local``, which isolates nothing, runs it as a
host program in the sandbox directory; any other sandbox without ``agent_path`` is refused,
never replaced by the host.

Params:
  version    the CLI version (default: the pinned ``VERSION`` below)
  args       extra command-line arguments (a list of strings)
  timeout_s  wall-clock limit (default: the trial's ``budgets.timeout_s``)
"""

from __future__ import annotations

import dataclasses
import functools
import shlex
from typing import Any, ClassVar

import anyio
from pydantic import Field

from harness.agents.base import Agent, AgentContext, AgentResult
from harness.agents.command import CommandAgent
from harness.agents.npm_stage import CliPackage, stage
from harness.config.models import Arm, Options
from harness.errors import ConfigError
from harness.sandbox.base import AgentBuild

_QUIET_HOME = 'export HOME="$(mktemp -d)"; trap \'rm -rf "$HOME"\' EXIT; '
"""A fresh, writable home for the CLI's own state (settings, sessions), per trial."""


class CliParams(Options):
    """``params`` of a ready-made CLI agent (claude-code, codex)."""

    version: str | None = Field(None, description="the CLI build; default: the pinned one")
    args: list[str] = Field(default_factory=list, description="extra command-line arguments")
    timeout_s: float | None = Field(
        None, gt=0, description="wall-clock limit; default: the trial's budgets.timeout_s"
    )


class _CliAgent(Agent):
    Params = CliParams
    observes_actions = False
    name: ClassVar[str]
    api: ClassVar[str]
    """The ``model.api`` the CLI speaks."""
    label: ClassVar[str]
    VERSION: ClassVar[str]

    @classmethod
    def wants_socket_dir(cls, params: Options, arm: Arm, environment: bool = True) -> bool:
        return True  # the metering proxy's socket (the executable is in the image)

    @classmethod
    def pinned(cls, arm: Arm) -> str:
        """The CLI build this arm runs, as written to the lock file."""
        return f"{cls.label}@{cls._version(arm.params)}"

    @classmethod
    def build(cls, arm: Arm, params: Options) -> AgentBuild:
        """The CLI build this arm installs into the task's image (fetched on this host)."""
        package = cls().package(cls._version(arm.params))
        return AgentBuild(
            key=f"{cls.name}-{package.version}",
            spec=package.spec,
            executable=package.executable.rsplit("/", 1)[-1],
            fetch=functools.partial(stage, package),
        )

    @classmethod
    def _version(cls, params: dict[str, Any]) -> str:
        return str(params.get("version") or cls.VERSION)

    def package(self, version: str) -> CliPackage:
        raise NotImplementedError

    def command(self, exe: str, args: list[str]) -> str:
        raise NotImplementedError

    async def run(self, ctx: AgentContext) -> AgentResult:
        params = ctx.params
        where = f"arms.{ctx.arm.name}"
        if ctx.model is None:
            raise ConfigError("suite", f"{where}.model", f"the {self.name} agent needs a model")
        if ctx.model.api != self.api:
            raise ConfigError(
                "suite",
                f"{where}.model.api",
                f"{self.label} speaks the {self.api} API; set model.api: {self.api}",
            )
        args = params.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ConfigError("suite", f"{where}.params.args", "must be a list of strings")
        package = self.package(self._version(params))
        if ctx.sandbox.agent_path:  # put into the sandbox by its backend
            path, mode = ctx.sandbox.agent_path, "sandbox"
        elif not ctx.sandbox.isolated:  # unsafe-local: the host's staged executable
            exe = await anyio.to_thread.run_sync(stage, package)
            path, mode = str(exe), "host"
        else:  # never unconfined on the host in place of a sandbox that cannot hold it
            raise ConfigError(
                "suite",
                f"{where}.agent",
                f"{self.label} runs inside the sandbox, and this trial's sandbox "
                f"({ctx.sandbox.id}) has no place for it (a task without an environment, "
                "or a backend that cannot mount it)",
            )
        command_params: dict[str, Any] = {
            "command": self.command(path, args),
            "where": mode,
            "stdin": False,
        }
        if "timeout_s" in params:
            command_params["timeout_s"] = params["timeout_s"]
        arm = ctx.arm.model_copy(update={"params": command_params})
        ctx.trajectory.record(
            "note", content=f"{self.label} {package.version} ({package.spec})", ok=True
        )
        result = await CommandAgent().run(dataclasses.replace(ctx, arm=arm))
        result.info["cli"] = self.pinned(ctx.arm)
        return result


class ClaudeCodeAgent(_CliAgent):
    name = "claude-code"
    api = "anthropic"
    label = "@anthropic-ai/claude-code"
    VERSION = "2.1.332"

    def package(self, version: str) -> CliPackage:
        return CliPackage(
            label=self.label,
            spec=f"@anthropic-ai/claude-code-linux-x64@{version}",
            executable="@anthropic-ai/claude-code-linux-x64/claude",
            version=version,
        )

    def command(self, exe: str, args: list[str]) -> str:
        # IS_SANDBOX: the CLI refuses to skip permissions as root unless told it is sandboxed;
        # one key variable only (with both it warns about conflicting credentials).
        extra = " ".join(shlex.quote(a) for a in args)
        return (
            _QUIET_HOME + "export IS_SANDBOX=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 "
            "DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1; "
            "unset ANTHROPIC_AUTH_TOKEN; "
            f'{shlex.quote(exe)} -p "$HARNESS_INSTRUCTION" --model "$HARNESS_MODEL" '
            f'--output-format text --dangerously-skip-permissions {extra} > "$HARNESS_ANSWER_FILE"'
        )


class CodexAgent(_CliAgent):
    name = "codex"
    api = "openai"
    label = "@openai/codex"
    VERSION = "0.171.0"

    def package(self, version: str) -> CliPackage:
        return CliPackage(
            label=self.label,
            spec=f"@openai/codex@{version}-linux-x64",
            executable="@openai/codex/vendor/x86_64-unknown-linux-musl/bin/codex",
            version=version,
        )

    def command(self, exe: str, args: list[str]) -> str:
        provider = (
            'model_providers.harness={name="harness", base_url="$OPENAI_BASE_URL", '
            'env_key="OPENAI_API_KEY", wire_api="responses"}'
        )
        extra = " ".join(shlex.quote(a) for a in args)
        return (
            _QUIET_HOME + 'export CODEX_HOME="$HOME/.codex"; mkdir -p "$CODEX_HOME"; '
            f"{shlex.quote(exe)} exec --skip-git-repo-check "
            '--dangerously-bypass-approvals-and-sandbox -m "$HARNESS_MODEL" '
            f'-c model_provider=harness -c "{provider.replace(chr(34), chr(92) + chr(34))}" '
            f'--output-last-message "$HARNESS_ANSWER_FILE" {extra} "$HARNESS_INSTRUCTION" '
            "< /dev/null"
        )


__all__ = ["ClaudeCodeAgent", "CodexAgent"]
