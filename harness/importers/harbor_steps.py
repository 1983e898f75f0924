"""Harbor's multi-step tasks (``[[steps]]`` and ``steps/NAME/``) as a task's ``steps``
(``harness.trial_multistep``).

Each ``[[steps]]`` table names a step whose directory holds its ``instruction.md``, its
``solution/solve.sh`` (the oracle's) and its ``tests/``, laid over the task's own
``tests/`` (a step's file of the same name wins) as the step's hidden material. Read: the
step's ``min_reward``, its agent timeout (the step's time budget) and its verifier timeout
(the tests' timeout is the largest), and the top-level ``multi_step_reward_strategy``
(``mean``, Harbor's default, or ``final``). The steps share the agent's sandbox; a step
with Harbor's shared verifier is graded in it, a step with a separate verifier (its own or
the task's: ``harbor_verifier``) in a fresh grading sandbox of that verifier's image, given
the task's and the step's ``artifacts``, while the agent's sandbox waits for the next step.
A step's own agent network (``[steps.agent]``) is its turn's (the agent's sandbox is
switched to it), a shared verifier's network its grading's in place. Refused, naming the
step and setting: a network the harness cannot give (``harbor_network.refusal``), a
separate verifier without a ``tests/Dockerfile``,
unreadable healthchecks, verifier variables that are not literal; a step without an
instruction or a ``test.sh``. A step's ``workdir/`` upload becomes its ``files`` (its
``setup.sh`` run from the work dir), its healthcheck a setup command polled before its turn,
its ``[steps.verifier.env]`` over the task's ``[verifier.env]`` a file its tests' command reads
(``harbor_image.ENV_FILE``).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.importers import harbor_health, harbor_image, harbor_network, harbor_verifier
from harness.importers.harbor_network import PUBLIC, Phase

if TYPE_CHECKING:
    from harness.importers.harbor_toml import HarborToml


class HarborStep(BaseModel):
    """One ``[[steps]]`` table: the keys read; Harbor's others are allowed and unread."""

    model_config = ConfigDict(extra="allow")
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    min_reward: float | None = Field(None, ge=0, le=1)
    agent: dict[str, Any] = Field(default_factory=dict)
    verifier: dict[str, Any] = Field(default_factory=dict)
    healthcheck: object = None


def read_steps(raw: object) -> list[HarborStep]:
    """The ``[[steps]]`` tables; raises ``ValueError`` with a one-line reason."""
    if not isinstance(raw, list) or not raw:
        raise ValueError("a readable [[steps]] list (steps: not a list of tables)")
    try:
        return [HarborStep.model_validate(table) for table in raw]
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        why = f"a readable [[steps]] table (steps.{where}: {err['msg'].lower()})"
        raise ValueError(why) from None


@dataclass(frozen=True)
class Networks:
    """The task's networks a step inherits: the agent's, its separate verifier's (with its
    ``[verifier.environment]`` baseline) and its shared verifier's (in the agent's sandbox)."""

    agent: Phase
    separate: Phase
    shared: Phase


def verifier_network(step: HarborStep, separate: bool, nets: Networks) -> Phase:
    """The step's verifier's network: its ``[steps.verifier]`` setting, else its own
    environment table's (a separate one's baseline), else the task's."""
    table, where = step.verifier, f"steps.{step.name}.verifier"
    base = nets.separate if separate else nets.shared
    own = table.get("environment")
    if separate and isinstance(own, dict) and own:
        hosts = own.get("allowed_hosts") or ()
        base = Phase(str(own.get("network_mode", PUBLIC)), _hosts(hosts), f"{where}.environment")
    if table.get("network_mode") is None and table.get("allowed_hosts") is None:
        return base
    mode = table.get("network_mode") or base.mode
    return Phase(str(mode), _hosts(table.get("allowed_hosts") or ()), f"{where}.network_mode")


def step_agent(step: HarborStep, nets: Networks) -> Phase | None:
    """The step's own agent network (``[steps.agent]``), or None: the task's."""
    table = step.agent
    if table.get("network_mode") is None and table.get("allowed_hosts") is None:
        return None
    mode = table.get("network_mode") or nets.agent.mode
    hosts = _hosts(table.get("allowed_hosts") or ())
    return Phase(str(mode), hosts, f"steps.{step.name}.agent.network_mode")


def _hosts(raw: object) -> tuple[str, ...]:
    return tuple(map(str, raw)) if isinstance(raw, list | tuple) else (str(raw),)


# long: one refusal per line, each a condition and its sentence.
def refusal(task_dir: Path, raw: object, separate_verifier: bool, nets: Networks) -> str | None:
    """Why these steps cannot run as the harness's steps, or None. A step's agent network
    must be the task's (one sandbox); a step graded in that sandbox (a shared verifier) must
    have the agent's network too; a separate one may have any the harness can give."""
    try:
        steps = read_steps(raw)
    except ValueError as exc:
        return str(exc)
    for step in steps:
        where = f"steps.{step.name}"
        sdir = task_dir / "steps" / step.name
        verifier = step.verifier
        own = step_agent(step, nets)
        if own is not None and (why := harbor_network.refusal(own)) is not None:
            return why
        separate = harbor_verifier.step_is_separate(verifier, separate_verifier)
        net = verifier_network(step, separate, nets)
        if (why := harbor_network.refusal(net)) is not None:
            return why
        if separate and harbor_verifier.tests_dir(task_dir, step.name) is None:
            return f"a separate verifier environment without tests/Dockerfile ({where}.verifier)"
        if any(not isinstance(a, str) for a in (step.model_extra or {}).get("artifacts", [])):
            return f"artifacts from service containers ({where}.artifacts)"
        if step.healthcheck:
            try:
                harbor_health.wait_command(step.healthcheck)
            except harbor_health.Refused as exc:
                return str(exc).replace("environment.healthcheck", f"{where}.healthcheck")
        if why := harbor_image.env_refusal(verifier.get("env"), False, f"{where}.verifier.env"):
            return why
        if not (sdir / "instruction.md").is_file():
            return f"an instruction.md for each step (steps/{step.name}/instruction.md missing)"
        if not any((d / "test.sh").is_file() for d in (sdir / "tests", task_dir / "tests")):
            return f"a test.sh for each step (steps/{step.name}/tests/test.sh missing)"
    return None


@dataclass(frozen=True)
class StepGrading:
    """What the steps' grading is made from, on the task's side."""

    task_dir: Path
    separate: bool
    """the task's verifier is separate (``[verifier]``)"""
    nets: Networks
    artifacts: tuple[str, ...]
    """the task's ``artifacts``"""
    workdir: str
    """the task's separate verifier's work dir"""
    slug: str
    version: str
    out: Path
    verifier_env: dict[str, Any]
    """the task's literal ``[verifier.env]``, under each step's own"""


def networks(toml: HarborToml) -> Networks:
    """The networks a step inherits: its shared verifier's ignores ``[verifier.environment]``
    (that verifier runs in the agent's sandbox)."""
    shared = toml.verifier.model_copy(update={"environment": None})
    agent, separate = harbor_network.phases(toml.environment, toml.agent, toml.verifier)
    _, in_place = harbor_network.phases(toml.environment, toml.agent, shared)
    return Networks(agent, separate, in_place)


def step_grading(
    task_dir: Path, toml: HarborToml, slug: str, out: Path, verifier_workdir: str
) -> StepGrading:
    """What the steps of ``toml`` are graded with (``grading_keys``)."""
    artifacts = tuple(map(str, toml.artifacts))
    return StepGrading(
        task_dir,
        toml.separate_verifier,
        networks(toml),
        artifacts,
        verifier_workdir,
        slug,
        str(toml.task.version),
        out,
        dict(toml.verifier.env) if isinstance(toml.verifier.env, dict) else {},
    )


def network_keys(step: HarborStep, how: StepGrading) -> dict[str, object]:
    """The step entry's own agent network when it is not the task's (``network`` /
    ``internet``: the agent's sandbox is switched to it for the step's turn)."""
    own = step_agent(step, how.nets)
    return {} if own is None or own.same(how.nets.agent) else harbor_network.phase_keys(own)


def _shared(step: HarborStep, how: StepGrading) -> dict[str, object]:
    """A step graded by Harbor's shared verifier, in the agent's sandbox: on the verifier's
    network, given as the step's in-place grading where it is not what the step would get
    anyway (the task's in-place grading network, else the step's agent's)."""
    nets = how.nets
    agent = step_agent(step, nets) or nets.agent
    inherited = agent if how.separate or nets.agent.same(nets.shared) else nets.shared
    wanted = verifier_network(step, False, nets)
    keys: dict[str, object] = {"grade_in_place": harbor_verifier.IN_PLACE} if how.separate else {}
    if not wanted.same(inherited):
        keys.update(
            grade_in_place=harbor_verifier.IN_PLACE, grading=harbor_network.phase_keys(wanted)
        )
    return keys


def grading_keys(step: HarborStep, how: StepGrading) -> dict[str, object]:
    """The step entry's grading keys: a step of Harbor's shared verifier is graded in place
    (``_shared``); a separate step gets a grading sandbox of its own (its verifier's
    environment, network, and the task's and the step's artifacts)."""
    if not harbor_verifier.step_is_separate(step.verifier, how.separate):
        return _shared(step, how)
    tests = harbor_verifier.tests_dir(how.task_dir, step.name)
    assert tests is not None, "refused at import"
    workdir = harbor_verifier.workdir(step.verifier.get("environment"), how.workdir)
    own = tests != how.task_dir / "tests" or workdir != how.workdir
    name = f"harbor-{how.slug}{f'-{step.name}' if own else ''}-verifier"
    mine = tuple(map(str, (step.model_extra or {}).get("artifacts", [])))
    verifier = harbor_verifier.Verifier(tests, workdir, (*how.artifacts, *mine, "/logs/artifacts"))
    keys = harbor_network.grading_keys(verifier_network(step, True, how.nets))
    keys.update(harbor_verifier.write_environment(verifier, name, how.version, how.out))
    return {"grading": keys}


def write_steps(
    task_dir: Path, raw: object, hidden_root: Path, hidden_rel: str, how: StepGrading
) -> list[dict]:
    """The task's ``steps`` entries; each step's hidden material is written under
    ``hidden_root`` (the task's tests/, then the step's over it), named relative to the
    task file as ``hidden_rel/<step>``; each step graded as ``grading_keys`` says."""
    out = []
    for step in read_steps(raw):
        sdir = task_dir / "steps" / step.name
        hidden = hidden_root / step.name
        for tests in (task_dir / "tests", sdir / "tests"):
            if tests.is_dir():
                shutil.copytree(tests, hidden, dirs_exist_ok=True)
        entry: dict[str, Any] = {
            "name": step.name,
            "instruction": (sdir / "instruction.md").read_text(),
            "hidden": f"{hidden_rel}/{step.name}",
        }
        step_env = step.verifier.get("env")
        if env := {**how.verifier_env, **(step_env if isinstance(step_env, dict) else {})}:
            harbor_image.write_env_file(hidden, env)  # the task's, then the step's over it
        entry.update(_before_turn(step, sdir, hidden_root, hidden_rel))
        solve = sdir / "solution" / "solve.sh"
        if solve.is_file():
            entry["solution"] = {"commands": [solve.read_text()]}
        if step.agent.get("timeout_sec"):
            entry["timeout_s"] = float(step.agent["timeout_sec"])
        if step.min_reward is not None:
            entry["min_reward"] = step.min_reward
        entry.update(network_keys(step, how))
        entry.update(grading_keys(step, how))
        out.append(entry)
    return out


def _before_turn(step: HarborStep, sdir: Path, hidden_root: Path, hidden_rel: str) -> dict:
    """The step's ``files`` (``steps/NAME/workdir``, written beside its hidden material as
    ``files/<task>/<step>``) and ``setup``: the upload's ``setup.sh`` run from the work dir,
    then the step's healthcheck polled (``harbor_health``)."""
    keys: dict[str, Any] = {}
    setup = []
    upload = sdir / "workdir"
    if upload.is_dir():
        root = hidden_root.parent.parent / "files" / hidden_root.name / step.name
        shutil.copytree(upload, root, dirs_exist_ok=True)
        for path in (root, *root.rglob("*")):  # the agent's to change, as a checkout's are
            path.chmod(path.stat().st_mode | 0o200)
        keys["files"] = f"files/{hidden_rel.rsplit('/', 1)[-1]}/{step.name}"
        if (upload / "setup.sh").is_file():
            setup.append("bash ./setup.sh")
    if isinstance(step.healthcheck, dict) and step.healthcheck:
        setup.append(harbor_health.wait_command(step.healthcheck))
    if setup:
        keys["setup"] = setup
    return keys


def verifier_timeout(raw: object, default: float) -> float:
    """The largest of the steps' verifier timeouts (the task's tests' timeout)."""
    found = [
        float(s.verifier["timeout_sec"]) for s in read_steps(raw) if s.verifier.get("timeout_sec")
    ]
    return max(found, default=default)


__all__ = [
    "HarborStep",
    "Networks",
    "StepGrading",
    "grading_keys",
    "network_keys",
    "networks",
    "step_agent",
    "step_grading",
    "read_steps",
    "refusal",
    "verifier_network",
    "verifier_timeout",
    "write_steps",
]
