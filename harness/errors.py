"""The error taxonomy: one place that decides what is retried and how a trial ends.

The orchestrator never matches exception messages or class-name strings; it asks
``classify(exc)`` which returns one of the trial statuses below. Only
``InfraError`` (and its subclasses) is retried.

**Who caused a fault.** Anything the agent did or returned is the agent's failure
(``AgentFailure`` with a reason, never retried): what it returned (``invalid_agent_result``),
what its code raised, ``SystemExit`` and ``KeyboardInterrupt`` included (``agent_error``),
its time budget (``timeout``), and state it left that breaks the machinery after its turn
(the state dump, copying hidden files in: ``broke_environment``) or processes it killed in
its own sandbox (``killed_own_sandbox``, ``oom``). Only faults of the machinery are
``InfraError`` and retried: the daemon unreachable, a container killed or removed from
outside, image or network failures, the model API unavailable, store conflicts. The call
is made on evidence, not guesses: the sandbox backend reports (``Sandbox.death_cause``) the
container's state and exit reason from the daemon, its OOM flag, ``kill``/``stop`` events sent
through the daemon's API, and whether the daemon answers; a step after the agent's turn that
fails in a sandbox still alive failed because of what the agent left (the same step worked
before the agent ran).
"""

from __future__ import annotations


class HarnessError(Exception):
    """Base of every error the harness raises on purpose."""


class ConfigError(HarnessError):
    """A suite, task or environment file is invalid. Printed as one line; exit code 2."""

    def __init__(self, file: str, field: str, message: str, line: int | None = None):
        self.file, self.field, self.message, self.line = file, field, message, line
        where = f"{file}:{line}" if line else file
        loc = f" field '{field}':" if field else ""
        # One line whatever the file held: a key or value with a line break is shown escaped.
        text = f"{where}:{loc} {message}"
        super().__init__(text.replace("\r", "\\r").replace("\n", "\\n"))


# --- infrastructure: retried up to the suite's max_attempts -------------------------------
class InfraError(HarnessError):
    """Something under the agent broke (sandbox, daemon, model API, store). Retried."""


class SandboxError(InfraError):
    """A sandbox could not be created, started, reached or was killed by the platform."""


class ModelUnavailable(InfraError):
    """The model API kept failing after the client's own retries.

    ``endpoint`` (the base URL) and ``cause`` (a short, stable name of the failure such as
    ``connection error``, ``timeout`` or ``HTTP 503``) let the run's circuit breaker count
    failures of one upstream by cause; both are None when unknown."""

    config = False
    """True when the run cannot succeed until its configuration changes (see below)."""
    what = "is unavailable"
    """How the run's breaker words this failure of the endpoint ("... model endpoint URL ...")."""

    def __init__(self, message: str, *, endpoint: str | None = None, cause: str | None = None):
        super().__init__(message)
        self.endpoint, self.cause = endpoint, cause


class ModelKeyRejected(ModelUnavailable):
    """The upstream refused the harness's own key (HTTP 401 or 403): every call of every
    trial would fail the same way, so the run stops at once as a configuration error
    (exit 5) instead of retrying trial after trial."""

    config = True
    what = "refused the harness's key"


class ModelNotFound(ModelUnavailable):
    """The upstream answered 404 to a request the harness built itself (the ``llm`` agent, a
    simulated user): the suite's model name or base URL is wrong, for every trial alike, so
    the run stops at once as a configuration error (exit 5). A 404 to an agent program's own
    request is that program's to handle (the metering proxy passes it on)."""

    config = True
    what = "has no such model or path"


class StoreConflict(InfraError):
    """A store write failed transiently (locked database, serialization failure)."""


# --- agent failures: the agent's fault, never retried ---------------------------------------
class AgentFailure(HarnessError):
    """The agent did not finish properly: budget, timeout, or its own process crashed."""

    def __init__(self, reason: str, detail: str = ""):
        self.reason, self.detail = reason, detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


class BudgetExceeded(AgentFailure):
    """A declared budget (steps, tokens, cost, time) ran out."""


class EpisodeEnded(HarnessError):
    """A terminating tool ran (e.g. a hand-over to a human): the episode is over and the
    trial goes on to grading as usual. Not a failure; the agent's later actions never run."""

    def __init__(self, tool: str):
        self.tool = tool
        super().__init__(f"the episode ended with tool '{tool}'")


# --- grader errors: the grader could not decide, never retried ------------------------------
class GraderError(HarnessError):
    """A grader crashed or could not read its evidence."""


class Interrupted(HarnessError):
    """SIGINT or SIGTERM stopped a run. ``run_id`` is set when the run row exists (it can be
    resumed); None when the signal came before anything was recorded."""

    def __init__(self, run_id: str | None, command: str | None = None):
        """``command``: the command that resumes the run (``store.refs.resume_command``,
        which keeps a non-default ``--store``)."""
        self.run_id = run_id
        super().__init__(
            f"interrupted: resume with `{command or f'harness run --resume {run_id}'}`"
            if run_id
            else "interrupted before the run was recorded: nothing to resume"
        )


class RunBusy(HarnessError):
    """Another live process owns the run this process was asked to resume."""


class EnvironmentBuildError(HarnessError):
    """An image recipe is broken. Fails the run before any trial starts; never retried."""


# Trial statuses (stored on every trial row).
PASSED = "passed"
FAILED = "failed"
INFRA_ERROR = "infra_error"
GRADER_ERROR = "grader_error"
HARNESS_ERROR = "harness_error"  # an exception the taxonomy does not know: a bug of ours
STATUSES = (PASSED, FAILED, INFRA_ERROR, GRADER_ERROR, HARNESS_ERROR)
RESOLVED = (PASSED, FAILED)

# Attempt outcomes beyond "ok" and the statuses: how an attempt that has no verdict ended.
INTERRUPTED = "interrupted"  # cancelled by Ctrl-C/SIGTERM (recorded by the run itself)
DRIVER_DIED = "driver_died"  # its driver process died during it (recorded on resume)
CRASHES = (INFRA_ERROR, DRIVER_DIED)
"""Attempt outcomes the crash rate counts: the infrastructure under the trial broke."""


def classify(exc: BaseException) -> str:
    """Map an exception to the status a trial ends with if it is not retried."""
    if isinstance(exc, InfraError):
        return INFRA_ERROR
    if isinstance(exc, AgentFailure):
        return FAILED
    if isinstance(exc, GraderError):
        return GRADER_ERROR
    return HARNESS_ERROR


def is_retryable(exc: BaseException) -> bool:
    """Only infrastructure crashes are retried: never failures, never unknown errors."""
    return isinstance(exc, InfraError)


def traceback_text(exc: BaseException) -> str:
    """The exception's traceback, its last 4,000 characters (where the cause is)."""
    import traceback

    return "".join(traceback.format_exception(exc)).strip()[-4000:]
