"""Grading where the agent has never been (DESIGN rule 7).

After the agent's turn its sandbox is stopped, what the graders need is taken out of it as
data (``Sandbox.export``: the state roots, or the workdir when code must run on it) and the
sandbox is destroyed. Files-kind state is computed on the host from that archive. Every
grading step that executes code — a command-kind state dump, hidden tests, a Harbor
verifier — runs in a FRESH grading sandbox from the same pinned image: the environment's
setup runs there first (nothing of the agent is in it yet), then the agent's files are
copied in, and the task's hidden files come from the harness's own copy, readable only by
the grader (a user the code under test never runs as). Tests run the code under test
through ``$HARNESS_AS_AGENT``, which drops to the unprivileged user with a clean
environment (``install_grading`` of each backend says how).

A task that must be graded in the agent's live sandbox declares ``grade_in_place`` with the
reason; then the agent's processes are killed instead, the same grading material is
installed in its sandbox, and the verdict is marked "graded in place".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from harness import errors
from harness.config.models import Environment, Task
from harness.network import Policy
from harness.sandbox import product_links
from harness.sandbox.base import ExecResult, Sandbox, SandboxProvider, SandboxRequest
from harness.sandbox.grading_material import (
    AS_AGENT_PATH,
    GRADER_HOME,
    HIDDEN_PATH,
    GradingPlace,
    grader_env,
)
from harness.sandbox.output import OUTPUT_LIMIT, STATE_OUTPUT_LIMIT
from harness.sandbox.workproduct import (
    AGENT_UID,
    BadWorkProduct,
    WorkArchive,
    WorkProduct,
    absolute,
    file_texts,
    files_state,
    parse_state,
)

if TYPE_CHECKING:
    from graders.base import Grader
    from graders.judge_workspace import WorkView
    from harness.config.task_parts import ServiceFiles

FILE_TEXT_LIMIT = 200_000
"""Bytes of each file a grader reads as text (a judge shows at most 60,000 characters)."""


def grader_runs_code(grader: Grader) -> bool:
    """Does the grader execute code (so it needs a grading sandbox)? ``runs_code`` is part
    of the grader protocol; graders written before it (custom ones) run nothing."""
    return bool(getattr(grader, "runs_code", False))


class GraderSandbox(Sandbox):
    """The sandbox graders are handed: every command runs as the grader with the grader's
    clean environment; ``hidden_dir`` is where the hidden files are."""

    def __init__(self, inner: Sandbox, place: GradingPlace, in_place: bool):
        self.inner, self.place, self.in_place = inner, place, in_place
        self.id, self.image_id, self.workdir = inner.id, inner.image_id, inner.workdir
        self.isolated = inner.isolated

    @property
    def hidden_dir(self) -> str | None:
        return self.place.hidden_dir

    async def exec(
        self,
        cmd: str,
        *,
        stdin: str | bytes | None = None,
        timeout: float | None = None,
        user: str | None = None,
        env: dict[str, str] | None = None,
        output_limit: int = OUTPUT_LIMIT,
    ) -> ExecResult:
        full = {**self.place.env, **(env or {})}
        return await self.inner.exec(
            cmd,
            stdin=stdin,
            timeout=timeout,
            user=user or self.place.user,
            env=full,
            output_limit=output_limit,
        )

    async def read_file(self, path: str, limit: int | None = None) -> bytes:
        return await self.inner.read_file(path, limit)

    async def write_file(self, path: str, data: bytes) -> None:
        await self.inner.write_file(path, data)

    async def copy_in(self, src: Path, dest: str) -> None:
        await self.inner.copy_in(src, dest)

    async def sweep(self) -> int:
        return await self.inner.sweep()

    async def alive(self) -> bool:
        return await self.inner.alive()

    async def destroy(self, interrupted: bool = False) -> None:
        if not self.in_place:  # the agent's own sandbox is destroyed by the trial
            await self.inner.destroy(interrupted)


@dataclass(frozen=True)
class GradingPlan:
    """What one task's grading needs from the agent's sandbox, decided before the trial."""

    exports: list[str]
    """Paths taken out of the agent's sandbox after its turn: relative to the workdir
    (``.``: the workdir itself), or absolute outside it."""
    state_kind: str
    state_roots: list[str]
    """Files kind: the declared roots (as declared)."""
    dump_roots: list[str]
    """Command kind: the paths (as ``exports``) copied into the grading sandbox before the
    dump runs."""
    restore_files: bool
    """Command kind without declared paths: the environment's own files are put back over
    the agent's copies before the dump runs."""
    runs_code: bool
    """A grader executes code (hidden tests): the whole workdir goes in after the dump."""
    in_place: str | None
    read_files: list[str] = field(default_factory=list)
    """Files whose text graders read (``workspace_files``), as they gave them; taken out
    with ``exports``."""
    read_workdir: bool = False
    """A grader explores the whole work dir as data (``reads_workdir``): it is exported."""
    foreign: bool = False
    """Graded in an environment of the task's own (Harbor's separate verifier): the agent's
    links may point only within what is taken out (``product_links``)."""
    services: dict[str, ServiceFiles] = field(default_factory=dict)
    """Files taken from the services beside the agent's sandbox (``grading.services``),
    appended to the product after the agent's and copied in with them."""

    @property
    def needs_sandbox(self) -> bool:
        return self.runs_code or self.state_kind == "command"


def plan(
    env: Environment | None, task: Task, graders: list[Grader], served_state: bool
) -> GradingPlan:
    """The grading plan of ``task`` in ``env`` (None: answer-only, nothing to take out)."""
    runs_code = any(grader_runs_code(g) for g in graders)
    if env is None:
        return GradingPlan([], "none", [], [], False, False, None)
    read = _dedupe_names(p for g in graders for p in _workspace_files(g))
    spec, workdir = env.spec.state, "."
    kind = "none" if served_state else spec.kind
    # Paths as each sandbox resolves them: relative to its own workdir (the same path on
    # Docker and bwrap; a directory of its own per sandbox on unsafe-local).
    roots = [_relative(p, env.spec.workdir) for p in spec.paths]
    dump_roots: list[str] = []
    if kind == "command":
        dump_roots = roots or [workdir]
    exports = list(dump_roots if kind == "command" else roots if kind == "files" else [])
    if runs_code:
        # What the code graders see of the agent's work: the work dir, or only the paths
        # the task's grading block names (Harbor's artifacts for a separate verifier).
        # What lies under the agent's work dir lands under the grading sandbox's; other
        # paths land where they were.
        given = task.grading.files
        own = task.grading.environment in (None, env.name)
        if given is None:
            wanted = [workdir]
        else:
            wanted = [_relative(p, env.spec.workdir) if own else p for p in given]
        exports = [*wanted, *(r for r in exports if not any(_under(r, w) for w in wanted))]
    exports += [_relative(p, env.spec.workdir) for p in read]
    read_workdir = any(_reads_workdir(g) for g in graders)
    if read_workdir:
        exports.append(workdir)
    return GradingPlan(
        exports=_dedupe(exports),
        state_kind=kind,
        state_roots=list(spec.paths) if kind == "files" else [],
        dump_roots=dump_roots,
        restore_files=kind == "command" and not roots,
        runs_code=runs_code,
        in_place=task.grade_in_place,
        read_files=read,
        read_workdir=read_workdir,
        foreign=runs_code and task.grading.environment not in (None, env.name),
        services=dict(task.grading.services) if runs_code and not task.grade_in_place else {},
    )


def _workspace_files(grader: Grader) -> list[str]:
    """The files a grader reads as text (graders written before ``workspace_files``: none)."""
    read = getattr(getattr(grader, "params", None), "workspace_files", None)
    return list(read()) if callable(read) else []


def _reads_workdir(grader: Grader) -> bool:
    reads = getattr(getattr(grader, "params", None), "reads_workdir", None)
    return bool(reads()) if callable(reads) else False


def _dedupe_names(paths: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(paths))


def _relative(path: str, workdir: str) -> str:
    """``path`` relative to ``workdir`` when it lies there (``.``: the workdir), else as it is."""
    full = PurePosixPath(absolute(workdir, path))
    base = PurePosixPath(workdir)
    if full == base or base in full.parents:
        return str(full.relative_to(base)) or "."
    return str(full)


def _under(path: str, root: str) -> bool:
    if root == ".":
        return not path.startswith("/")
    return (
        PurePosixPath(path) == PurePosixPath(root)
        or PurePosixPath(root) in PurePosixPath(path).parents
    )


def _dedupe(paths: list[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if not any(_under(p, q) for q in out):
            out = [q for q in out if not _under(q, p)] + [p]
    return out


# ----------------------------------------------------------------------------- state
async def initial_state(sandbox: Sandbox, env: Environment, plan_: GradingPlan) -> dict | None:
    """s0, after setup and before the agent: files kind from the sandbox's archive, command
    kind from the dump run in it (nothing of the agent is there yet)."""
    if plan_.state_kind == "files":
        product = await sandbox.export(plan_.exports)
        try:
            return await _files_state(product, plan_)
        finally:
            product.close()
    if plan_.state_kind == "command":
        return await _dump(sandbox, env, user=None, env_vars=None)
    return None


async def _files_state(product: WorkProduct, plan_: GradingPlan) -> dict:
    import anyio.to_thread

    return await anyio.to_thread.run_sync(files_state, product, plan_.state_roots)


async def _dump(sandbox: Sandbox, env: Environment, *, user: str | None, env_vars) -> dict:
    command = env.spec.state.command
    assert command, "state.command is required for kind 'command'"
    result = await sandbox.exec(
        command, timeout=120, user=user, env=env_vars, output_limit=STATE_OUTPUT_LIMIT
    )
    what = f"the state dump of environment '{env.name}'"
    if result.dropped:
        raise BadWorkProduct(f"{what} printed more than {STATE_OUTPUT_LIMIT} bytes")
    if not result.ok:
        raise BadWorkProduct(
            f"{what} failed (exit {result.exit_code}): {result.stderr.strip()[-300:]}"
        )
    return parse_state(result.stdout, what)


async def final_file_texts(product: WorkProduct, plan_: GradingPlan) -> dict[str, str | None]:
    """The text of the files graders read, from the agent's archive (nothing runs anywhere)."""
    import anyio.to_thread

    if not plan_.read_files:
        return {}
    return await anyio.to_thread.run_sync(file_texts, product, plan_.read_files, FILE_TEXT_LIMIT)


async def final_work_view(product: WorkProduct, plan_: GradingPlan) -> WorkView | None:
    """The agent's work dir as data for graders that explore it, indexed from its archive on
    the host (nothing runs anywhere); None when no grader asked."""
    import anyio.to_thread

    from graders.judge_workspace import WorkView

    if not plan_.read_workdir:
        return None
    return await anyio.to_thread.run_sync(WorkView, product)


WORK_ARCHIVE_LIMIT = 16 * 1024 * 1024
"""Bytes of the agent's archive kept with a trial whose judge reads its work (``harness
validate --judge-checks`` re-reads it there); a larger one is not kept, and says so."""


async def kept_work_archive(
    product: WorkProduct, plan_: GradingPlan
) -> tuple[WorkArchive, bytes | None] | None:
    """The agent's archive as a blob (its record, its bytes) when a grader read its files
    or explored its work dir, so the judge can be asked again on the same work; None when
    none did. Over ``WORK_ARCHIVE_LIMIT`` the record says so and holds no blob."""
    import hashlib

    import anyio.to_thread

    if not (plan_.read_workdir or plan_.read_files):
        return None
    size = product.path.stat().st_size
    record: WorkArchive = {"blob": None, "workdir": product.workdir, "bytes": size}
    if size > WORK_ARCHIVE_LIMIT:
        return {**record, "note": f"not kept: over {WORK_ARCHIVE_LIMIT} bytes"}, None
    data = await anyio.to_thread.run_sync(product.path.read_bytes)
    return {**record, "blob": hashlib.sha256(data).hexdigest()}, data


async def final_files_state(product: WorkProduct, plan_: GradingPlan) -> dict | None:
    """s1 of a files-kind state, from the agent's archive (nothing runs anywhere)."""
    if plan_.state_kind != "files":
        return None
    return await _files_state(product, plan_)


# ----------------------------------------------------------------------------- sandbox
async def open_grading(
    provider: SandboxProvider,
    request: SandboxRequest,
    setup: list[str],
    hidden: Path | None,
) -> GraderSandbox:
    """A fresh grading sandbox from the request's pinned image, after ``setup`` (the
    environment's and the task's setup commands, run as the unprivileged user: nothing of
    the agent is there yet), with the grading material installed. The caller imports the
    agent's files."""
    box = await provider.create(request)
    try:
        for command in setup:
            result = await box.exec(command, timeout=300, user=str(AGENT_UID))
            if not result.ok:
                raise errors.SandboxError(
                    f"setup command {command!r} failed in the grading sandbox "
                    f"(exit {result.exit_code}): {result.stderr.strip()[-300:]}"
                )
        place = await box.install_grading(hidden)
    except BaseException:
        await box.destroy()
        raise
    return GraderSandbox(box, place, in_place=False)


async def install_in_place(
    sandbox: Sandbox, hidden: Path | None, network: Policy | None = None
) -> GraderSandbox:
    """Grading material in the agent's own (swept) sandbox: a task graded in place, without
    the agent's links into the grader's places (``product_links``); with ``network``, the
    grading's own network (``harness.network.in_place_policy``), opened only now that the
    agent's processes are gone and its links removed (``end_grading`` closes it)."""
    box = GraderSandbox(sandbox, await sandbox.install_grading(hidden), in_place=True)
    # As the agent's user: the links are its, in its directories (root holds no capability
    # to remove them there); the agent's processes are gone.
    await box.exec(product_links.UNLINK_IN_PLACE, timeout=120, user=str(AGENT_UID))
    if network is not None:
        await sandbox.switch_network(network.network or [], network.internet)
    return box


async def command_state(
    box: GraderSandbox, env: Environment, plan_: GradingPlan, product: WorkProduct | None
) -> dict | None:
    """s1 of a command-kind state: the agent's state files go into the grading sandbox (with
    the environment's own files restored over them when no paths are declared) and the
    environment's dump runs as the grader."""
    if plan_.state_kind != "command":
        return None
    if product is not None:
        await _import(box, product, plan_.dump_roots, plan_.foreign)
        if plan_.restore_files and env.files_dir is not None:
            await box.inner.restore_files(env.files_dir)
    return await _dump(box, env, user=None, env_vars=None)


async def import_workdir(box: GraderSandbox, plan_: GradingPlan, product: WorkProduct) -> None:
    """Before hidden tests: the agent's whole work dir (and state roots) as it left them."""
    if plan_.runs_code:
        served = [p for files in plan_.services.values() for p in files.paths]
        await _import(box, product, [*plan_.exports, *served], plan_.foreign)


async def _import(box: GraderSandbox, product: WorkProduct, roots: list[str], foreign: bool):
    """The agent's files into the grading sandbox, without the links that would make the
    grader read what is not the agent's (``product_links``)."""
    import anyio.to_thread

    safe = await anyio.to_thread.run_sync(product_links.confined, product, foreign)
    try:
        await box.inner.import_product(safe, roots)
    finally:
        safe.close()


def agent_fault(exc: BaseException, what: str) -> errors.AgentFailure:
    """What the agent left could not be read or used: its failure, never ours."""
    return errors.AgentFailure("broke_environment", f"{what} failed after the agent's turn: {exc}")


__all__ = [
    "AS_AGENT_PATH",
    "GRADER_HOME",
    "HIDDEN_PATH",
    "GraderSandbox",
    "GradingPlace",
    "GradingPlan",
    "agent_fault",
    "command_state",
    "final_file_texts",
    "final_files_state",
    "final_work_view",
    "grader_env",
    "import_workdir",
    "initial_state",
    "install_in_place",
    "open_grading",
    "plan",
]
