"""Read suite, task and environment files into validated models, with one-line errors.

Every problem becomes a ``ConfigError`` naming the file, the field path (``arms[0].agent``)
and, where the YAML parser knows it, the line. The CLI prints it and exits with code 2.
This is plain data: names of agents, graders and backends are checked one step up, in
``harness.resolve``, which keeps each file's line map to report its errors the same way.
"""

from __future__ import annotations

import glob
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from harness.config.base import FieldError, parse_bytes
from harness.config.env import expand_env
from harness.config.models import Environment, EnvironmentSpec, Suite, Task, TaskFile
from harness.config.overrides import given
from harness.config.paths import check_inside, check_tree
from harness.config.selections import select_arms, select_tasks
from harness.config.step_grading import graded_views
from harness.config.subset import FitSource, SubsetDraw, subset_of
from harness.config.yamlio import FieldPath, read_yaml
from harness.errors import ConfigError

Path_ = FieldPath


def field_path(loc: Path_) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def nearest_line(lines: dict[Path_, int], loc: Path_) -> int | None:
    for cut in range(len(loc), -1, -1):
        if loc[:cut] in lines:
            return lines[loc[:cut]]
    return None


def validate(
    model: type[BaseModel], data: Any, file: Path, lines: dict[Path_, int], prefix: Path_ = ()
) -> Any:
    """Validate ``data`` against ``model``; the first error becomes a one-line ConfigError."""
    if not isinstance(data, dict):
        raise ConfigError(
            str(file),
            field_path(prefix),
            f"expected a mapping, got {_kind(data)}",
            nearest_line(lines, prefix),
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise from_validation(exc, file, lines, prefix) from None


def from_validation(
    exc: ValidationError, file: Path, lines: dict[Path_, int], prefix: Path_ = ()
) -> ConfigError:
    """The first error of ``exc`` as one line naming the file, the field and its line."""
    where, msg = first_error(exc)
    loc = (*prefix, *where)
    return ConfigError(str(file), field_path(loc), msg, nearest_line(lines, loc))


def first_error(exc: ValidationError) -> tuple[Path_, str]:
    """Where the first error of ``exc`` is and what it says (with how many more follow)."""
    err = exc.errors()[0]
    loc: Path_ = tuple(p for p in err["loc"] if p != "__root__")
    raised = (err.get("ctx") or {}).get("error")
    if isinstance(raised, FieldError):  # a model's own check naming the field it is about
        loc = (*loc, *raised.loc)
    msg = _message(err)
    more = len(exc.errors()) - 1
    if more:
        msg += f" (and {more} more error{'s' if more > 1 else ''})"
    return loc, msg


def _message(err: ErrorDetails) -> str:
    kind, msg = err["type"], err["msg"]
    if kind == "extra_forbidden":
        return "unknown key (check the spelling; every key is in docs/reference.md)"
    if kind == "missing":
        return "required field is missing"
    got = err.get("input")
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"{msg.lower()}, got {_kind(got)} {_short(got)}".rstrip()
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    return msg


def _kind(value: object) -> str:
    return {
        dict: "a mapping",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "nothing",
    }.get(type(value), type(value).__name__)


def _short(value: object) -> str:
    if isinstance(value, dict | list):
        return ""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ------------------------------------------------------------------------------ resolution
@dataclass
class LoadedTask:
    task: Task
    file: Path
    line: int | None = None  # where the task starts in its file, for errors found later
    field_prefix: str = ""  # "tasks[3]" in a multi-task file
    lines: dict[Path_, int] = field(default_factory=dict, repr=False, compare=False)
    """Field path -> line in ``file`` (for errors found after loading)."""
    prefix: Path_ = ()
    """Where the task sits in ``file``: ``("tasks", i)`` in a task list, else ``()``."""

    @property
    def hidden_dir(self) -> Path | None:
        return (self.file.parent / self.task.hidden) if self.task.hidden else None

    def step_files_dir(self, index: int) -> Path | None:
        """A multi-step task's step's files, copied into the workdir before its turn."""
        rel = self.task.steps[index].files
        return (self.file.parent / rel) if rel else None

    def step_hidden_dir(self, index: int) -> Path | None:
        """A multi-step task's step's hidden material (default: the task's)."""
        rel = self.task.steps[index].hidden
        return (self.file.parent / rel) if rel else self.hidden_dir


@dataclass
class ResolvedSuite:
    """A suite with its tasks and environments loaded, validated and hashed."""

    suite: Suite
    path: Path
    tasks: list[LoadedTask]
    environments: dict[str, Environment] = field(default_factory=dict)
    config_hash: str = ""
    lines: dict[Path_, int] = field(default_factory=dict, repr=False, compare=False)
    """Field path -> line in the suite file (for errors found after loading)."""
    subset: SubsetDraw | None = None
    """The subset drawn (``subset:``): ``tasks`` are its tasks; its population is the suite's."""

    def task(self, task_id: str) -> LoadedTask:
        return self._by_id[task_id]

    def __post_init__(self) -> None:
        self._by_id = {t.task.id: t for t in self.tasks}


def load_suite(
    path: str | Path,
    overrides: Mapping[str, object] | None = None,
    fits: FitSource | None = None,
    whole: bool = False,
) -> ResolvedSuite:
    """Load a suite file, apply CLI overrides, then load and check every task and environment.
    ``fits``: the store's 2PL fits, for a subset drawn from one; ``whole``: every task, the
    suite's ``subset:`` not drawn (what ``harness anchors`` fits)."""
    path = Path(path)
    settings = given(overrides)
    # Selections (--task, --limit, --arm) pick from the suite; they are not suite settings.
    only_tasks = settings.pop("task", None)
    limit = settings.pop("limit", None)
    only_arms = settings.pop("arm", None)
    data, lines = read_yaml(path)
    if isinstance(data, dict) and settings:
        data = {**data, **settings}
    suite = _validate_suite(data, path, lines, settings)
    if only_arms:
        suite = select_arms(suite, only_arms, path)
    suite = _expand_model_env(suite, path, lines)
    every_task = _load_tasks(suite, path, lines)
    _check_must_never(suite, every_task, path, lines)
    tasks = select_tasks(every_task, only_tasks, limit, path)
    drawn = (
        None
        if whole
        else subset_of(
            suite, [t.task for t in tasks], (path, nearest_line(lines, ("subset",))), fits, limit
        )
    )
    tasks = [t for t in tasks if drawn is None or t.task.id in drawn["tasks"]]
    env_root = _environments_dir(suite, path, lines)
    environments: dict[str, Environment] = {}
    for lt in tasks:
        graded = [view.grading.environment for _, view in graded_views(lt.task)]
        for name in (lt.task.environment, *graded):
            if name and name not in environments:
                environments[name] = load_environment(env_root, name, lt)
    _check_internet(suite, tasks, path, lines)
    _check_disk(suite, environments, path, lines)
    resolved = ResolvedSuite(suite, path, tasks, environments, lines=lines, subset=drawn)
    resolved.config_hash = config_hash(resolved)
    return resolved


def _validate_suite(
    data: Any, path: Path, lines: dict[Path_, int], from_command_line: Mapping[str, object]
) -> Suite:
    """The suite model; a bad value given on the command line (``--trials 0``) is blamed on
    the flag, not on the suite file's line for that key."""
    try:
        suite: Suite = validate(Suite, data, path, lines)
    except ConfigError as exc:
        key = exc.field.split(".")[0].split("[")[0]
        if key in from_command_line:
            flag = "--" + key.replace("_", "-")
            raise ConfigError("command line", flag, exc.message) from None
        raise
    return suite


def _check_must_never(
    suite: Suite, tasks: list[LoadedTask], path: Path, lines: dict[Path_, int]
) -> None:
    """Every class the gate's ``must_never`` names is some task's class (a typo would
    otherwise be found only when the gate reads a run)."""
    if suite.gate is None:
        return
    classes = sorted({t.task.class_ for t in tasks})
    for i, name in enumerate(suite.gate.must_never):
        if name not in classes:
            loc = ("gate", "must_never", i)
            raise ConfigError(
                str(path),
                field_path(loc),
                f"no task has class '{name}' (the suite's classes: {', '.join(classes)})",
                nearest_line(lines, loc),
            )


def _check_disk(
    suite: Suite, environments: dict[str, Environment], path: Path, lines: dict[Path_, int]
) -> None:
    """Each trial's quota (``limits.disk``) holds its environment's files, which are copied
    into its work dir before the agent starts: else every trial would fail out of space."""
    quota = parse_bytes(suite.limits.disk)
    for env in environments.values():
        files = env.files_dir
        size = sum(p.lstat().st_size for p in files.rglob("*")) if files else 0
        if size > quota:
            raise ConfigError(
                str(path),
                "limits.disk",
                f"{suite.limits.disk} cannot hold environment '{env.name}': its files are "
                f"{size / (1 << 20):.1f} MiB; raise limits.disk",
                nearest_line(lines, ("limits", "disk")),
            )


def _check_internet(
    suite: Suite, tasks: list[LoadedTask], path: Path, lines: dict[Path_, int]
) -> None:
    """Open egress is the user's to allow: a task that asks for it (for its agent, in any
    step, or its grading) in a suite without ``allow_internet`` is refused, naming the task."""
    if suite.allow_internet:
        return
    for lt in tasks:
        t = lt.task
        wanted: list[tuple[Path_, bool]] = [(("internet",), t.internet)]
        wanted += [(("steps", i, "internet"), bool(s.internet)) for i, s in enumerate(t.steps)]
        wanted += [((*at, "grading", "internet"), v.grading.internet) for at, v in graded_views(t)]
        for loc, wants in wanted:
            if wants:
                raise ConfigError(
                    str(lt.file),
                    _sub(lt.field_prefix, field_path(loc)),
                    f"task '{lt.task.id}' needs open egress (the internet) and the suite "
                    f"{path.name} does not allow it: run with --allow-internet or set "
                    "allow_internet: true in the suite",
                    nearest_line(lt.lines, (*lt.prefix, *loc)) or lt.line,
                )


def _expand_model_env(suite: Suite, path: Path, lines: dict[Path_, int]) -> Suite:
    """Resolve ${VAR} in arms' model names and URLs now, so the run records what ran."""
    arms = []
    for i, arm in enumerate(suite.arms):
        if arm.model is not None:
            try:
                arm = arm.model_copy(update={"model": expand_env(arm.model)})
            except ConfigError as exc:
                loc = ("arms", i, "model", exc.field)
                raise ConfigError(
                    str(path), field_path(loc), exc.message, nearest_line(lines, loc)
                ) from None
        arms.append(arm)
    return suite.model_copy(update={"arms": arms})


def _load_tasks(suite: Suite, path: Path, lines: dict[Path_, int]) -> list[LoadedTask]:
    base = path.parent
    files: list[Path] = []
    for i, pattern in enumerate(suite.tasks):
        loc = ("tasks", i)
        matches = sorted(Path(p) for p in glob.glob(str(base / pattern), recursive=True))
        matches = [m for m in matches if m.is_file() and m.resolve() != path.resolve()]
        if not matches:
            what = "file not found" if not glob.has_magic(pattern) else "glob matched no task file"
            raise ConfigError(
                str(path), field_path(loc), f"{what}: {pattern}", nearest_line(lines, loc)
            )
        files.extend(m for m in matches if m not in files)
    seen: dict[str, Path] = {}
    tasks: list[LoadedTask] = []
    for file in files:
        for lt in load_task_file(file):
            if lt.task.id in seen:
                raise ConfigError(
                    str(file),
                    _sub(lt.field_prefix, "id"),
                    f"duplicate task id '{lt.task.id}' (also in {seen[lt.task.id]})",
                    lt.line,
                )
            seen[lt.task.id] = file
            tasks.append(lt)
    return tasks


def load_task_file(file: Path, root: Path | None = None) -> list[LoadedTask]:
    """A task file holds one task, or ``{defaults: {...}, tasks: [...]}``. Its ``hidden:``
    directories must stay inside ``root`` (default: the task file's own folder)."""
    root = file.parent if root is None else root
    data, lines = read_yaml(file)
    if isinstance(data, dict) and "tasks" in data:
        tf: TaskFile = validate(TaskFile, data, file, lines)
        items: list[tuple[Path_, object]] = [
            (("tasks", i), _deep_merge(tf.defaults, t)) for i, t in enumerate(tf.tasks)
        ]
    else:
        items = [((), data)]
    out = []
    for prefix, item in items:
        task: Task = validate(Task, item, file, lines, prefix)
        dirs = [((*prefix, "hidden"), task.hidden)]
        for i, st in enumerate(task.steps):
            dirs += [((*prefix, "steps", i, "hidden"), st.hidden)]
            dirs += [((*prefix, "steps", i, "files"), st.files)]
        for hidden_loc, rel in dirs:
            if rel:
                where = (str(file), field_path(hidden_loc), nearest_line(lines, hidden_loc))
                hidden = file.parent / rel
                check_inside(root, hidden, *where, "the task file's folder")
                if not hidden.is_dir():
                    raise ConfigError(*where[:2], f"directory not found: {rel}", where[2])
                check_tree(root, hidden, *where)
        out.append(
            LoadedTask(task, file, nearest_line(lines, prefix), field_path(prefix), lines, prefix)
        )
    return out


def _deep_merge(base: Mapping[str, object], over: object) -> object:
    """A task-file entry over the file's defaults: nested mappings merge, the rest replace."""
    if not isinstance(over, dict):
        return over
    out = dict(base)
    for k, v in over.items():
        under = out.get(k)
        out[k] = _deep_merge(under, v) if isinstance(under, dict) and isinstance(v, dict) else v
    return out


def _environments_dir(suite: Suite, path: Path, lines: dict[Path_, int]) -> Path:
    if suite.environments_dir:
        root = (path.parent / suite.environments_dir).resolve()
        if not root.is_dir():
            raise ConfigError(
                str(path),
                "environments_dir",
                f"directory not found: {root}",
                nearest_line(lines, ("environments_dir",)),
            )
        return root
    for parent in [path.parent.resolve(), *path.parent.resolve().parents]:
        if (parent / "environments").is_dir():
            return parent / "environments"
    return path.parent / "environments"


def _sub(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def load_environment(root: Path, name: str, referenced_from: LoadedTask | Path) -> Environment:
    env_dir = root / name
    file = env_dir / "environment.yaml"
    if not file.is_file():
        lt = referenced_from if isinstance(referenced_from, LoadedTask) else None
        raise ConfigError(
            str(lt.file if lt else referenced_from),
            _sub(lt.field_prefix, "environment") if lt else "environment",
            f"unknown environment '{name}' (no {file})",
            lt.line if lt else None,
        )
    data, lines = read_yaml(file)
    spec: EnvironmentSpec = validate(EnvironmentSpec, data, file, lines)
    if spec.name != name:
        raise ConfigError(
            str(file),
            "name",
            f"must equal the directory name '{name}'",
            nearest_line(lines, ("name",)),
        )
    if spec.state.kind == "command" and not spec.state.command:
        raise ConfigError(
            str(file),
            "state.command",
            "required when state.kind is 'command'",
            nearest_line(lines, ("state",)),
        )
    script = _dump_script_under_state_paths(spec, env_dir)
    if script is not None:
        raise ConfigError(
            str(file),
            "state.paths",
            f"the dump runs {script}, which this lists among the files copied from the "
            "agent's sandbox: grading would run what the agent could change (list only "
            "the files the dump reads)",
            nearest_line(lines, ("state", "paths")),
        )
    for name_, rel in (
        ("files", spec.files),
        ("policy", spec.policy),
        ("image.dockerfile", spec.image.dockerfile),
    ):
        if rel:
            line = nearest_line(lines, tuple(name_.split(".")))
            target = env_dir / rel
            check_inside(env_dir, target, file, name_, line, "the environment's folder")
            if name_ == "files" and target.is_dir():
                check_tree(env_dir, target, file, name_, line)
    return Environment(spec, env_dir)


def _dump_script_under_state_paths(spec: EnvironmentSpec, env_dir: Path) -> str | None:
    """The first word of a command-kind dump naming one of the environment's own files that
    lies under ``state.paths`` (copied from the agent's sandbox before the dump), or None."""
    import posixpath
    import shlex

    state = spec.state
    if state.kind != "command" or not state.command or not state.paths or not spec.files:
        return None
    try:
        words = shlex.split(state.command)
    except ValueError:
        return None
    files = env_dir / spec.files
    roots = [posixpath.normpath(posixpath.join(spec.workdir, p)) for p in state.paths]
    for word in words:
        path = posixpath.normpath(posixpath.join(spec.workdir, word))
        if not path.startswith(spec.workdir.rstrip("/") + "/"):
            continue
        rel = posixpath.relpath(path, spec.workdir)
        if (files / rel).exists() and any(
            path == r or path.startswith(r.rstrip("/") + "/") for r in roots
        ):
            return word
    return None


def config_hash(resolved: ResolvedSuite) -> str:
    """sha256 of the resolved configuration: suite, every task and every environment spec."""
    doc = {
        "suite": resolved.suite.model_dump(mode="json"),
        "tasks": [t.task.model_dump(mode="json", by_alias=True) for t in resolved.tasks],
        "environments": {
            n: e.spec.model_dump(mode="json") for n, e in sorted(resolved.environments.items())
        },
    }
    if resolved.subset is not None:  # absent otherwise: older runs' hashes stay as they were
        doc["subset"] = resolved.subset
    blob = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()
