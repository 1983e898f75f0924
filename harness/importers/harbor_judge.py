"""Harbor's model-judge verifier as the harness's ``judge`` grader.

Harbor judges with a script: ``[verifier.env]`` hands the verifier an API key
(``KEY = "${VAR}"``, read from the host) and a model name, and ``tests/test.sh`` runs one
Python script with ``uv run`` that reads a file the agent left, asks the Anthropic Messages
API for a score and writes it as the reward. Run as it is, that fetches the script's
dependencies from PyPI at grading time and puts the key in the grading sandbox. The import
reads the script instead of running it and writes the judge grader it amounts to:

- the key's variable -> ``model.api_key_env`` (the key stays on the host, in the harness's
  upstream client); the model variable's value -> ``model.name``; ``api: messages`` at
  ``${ANTHROPIC_BASE_URL:-https://api.anthropic.com}/v1`` (the variable Anthropic's own
  clients read), with the script's ``max_tokens`` and ``temperature`` when it gives them;
- the absolute paths the script opens (outside ``/tests`` and ``/logs``) -> ``files``, the
  text the judge is shown (``reads: []``: nothing else of the trial, as the script shows
  nothing else);
- the reward's key -> one numeric criterion, its text the script's question (the literal
  text before the first placeholder of its prompt), its scale the score field's bounds
  (``ge``/``le``; default 0 to 1). The script states no threshold: its score is Harbor's
  reward, and an imported Harbor reward passes at 1 (as every imported ``tests_script``),
  so ``pass_at`` is 1.

Anything else in ``[verifier.env]``, a ``test.sh`` that does more than run one script, a
script that calls no Anthropic client, writes more than one reward or compares its score
with a number of its own is refused in one line naming the file and the field.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BASE_URL_VAR = "ANTHROPIC_BASE_URL"
"""Where the judge's endpoint may be moved (the variable Anthropic's own clients read)."""
BASE_URL = f"${{{BASE_URL_VAR}:-https://api.anthropic.com}}/v1"
_KEY_REF = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
_RUN = re.compile(r"^uv run (?:--\S+ )*/tests/([A-Za-z0-9_.-]+\.py)$")
_SKIP = ("/tests", "/logs")


class Refused(ValueError):
    """The verifier is not one model-judge script; the message is the one-line reason."""


def _refuse(where: str) -> Refused:
    return Refused(
        f"verifier environment variables from the host ({where}): only a model-judge script "
        "takes them, as the judge grader, since no key may go into a sandbox"
    )


def script_of(task_dir: Path) -> Path:
    """The one script ``tests/test.sh`` runs with ``uv run``."""
    test_sh = task_dir / "tests" / "test.sh"
    lines = [
        line.strip()
        for line in test_sh.read_text(errors="replace").splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    found = _RUN.match(lines[0]) if len(lines) == 1 else None
    if found is None:
        shown = lines[0][:60] if lines else "nothing"
        why = f"tests/test.sh runs {shown!r}, not one 'uv run /tests/SCRIPT.py' judge script"
        raise _refuse(why)
    script = task_dir / "tests" / found.group(1)
    if not script.is_file():
        raise _refuse(f"tests/test.sh runs tests/{found.group(1)}, which is missing")
    return script


@dataclass
class _Script:
    """What the judge script does, read from its syntax tree (never run)."""

    calls_anthropic: bool
    create: ast.Call | None
    files: list[str]
    rewards: list[str]
    bounds: tuple[float, float]
    thresholds: list[float]


def _string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _number(node: ast.AST | None) -> float | None:
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _read(tree: ast.Module) -> _Script:
    out = _Script(False, None, [], [], (0.0, 1.0), [])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            out.calls_anthropic |= any((m or "").split(".")[0] == "anthropic" for m in mods)
        elif isinstance(node, ast.Compare):
            out.thresholds += [n for c in node.comparators if (n := _number(c)) is not None]
        elif isinstance(node, ast.Call):
            fn, first = _name(node.func), _string(node.args[0]) if node.args else None
            if fn in ("Path", "open") and first and first.startswith("/"):
                if not first.startswith(_SKIP) and first not in out.files:
                    out.files.append(first)
            elif fn == "create" and _name(getattr(node.func, "value", node)) == "messages":
                out.create = node
            elif fn == "dumps" and node.args and isinstance(node.args[0], ast.Dict):
                out.rewards += [k for k in map(_string, node.args[0].keys) if k is not None]
            elif fn == "Field":
                kw = {k.arg: _number(k.value) for k in node.keywords}
                low, high = kw.get("ge"), kw.get("le")
                if low is not None and high is not None:
                    out.bounds = (low, high)
    return out


def _env_key(node: ast.AST | None) -> str | None:
    """``os.getenv("X")``, ``os.environ.get("X")`` or ``os.environ["X"]``: X."""
    if isinstance(node, ast.Call) and _name(node.func) in ("getenv", "get") and node.args:
        return _string(node.args[0])
    if isinstance(node, ast.Subscript) and _name(node.value) == "environ":
        return _string(node.slice)
    return None


def _question(create: ast.Call) -> str | None:
    """The literal text of the prompt before its first placeholder."""
    for kw in create.keywords:
        if kw.arg != "messages" or not isinstance(kw.value, ast.List) or not kw.value.elts:
            continue
        message = kw.value.elts[-1]
        if not isinstance(message, ast.Dict):
            return None
        content = dict(zip(map(_string, message.keys), message.values, strict=True))
        node = content.get("content")
        parts = node.values if isinstance(node, ast.JoinedStr) else [node] if node else []
        head = (_string(parts[0]) or "") if parts else ""
        return head.strip().split("\n\n")[0].strip() or None
    return None


# long: one check per line of the pattern, each with its own one-line refusal.
def judge_grader(task_dir: Path, env: dict[str, Any]) -> dict[str, Any]:
    """The judge grader for a Harbor model-judge verifier; raises ``Refused``."""
    script = script_of(task_dir)
    rel = f"tests/{script.name}"
    try:
        tree = ast.parse(script.read_text(errors="replace"), filename=rel)
    except SyntaxError as exc:
        raise _refuse(f"{rel}: not Python (line {exc.lineno})") from None
    found = _read(tree)
    if not found.calls_anthropic or found.create is None:
        raise _refuse(f"{rel}: no Anthropic messages.create call, the one judge API mapped")
    keywords = {k.arg: k.value for k in found.create.keywords}
    model_node = keywords.get("model")
    model_var = _env_key(model_node)
    keys = {k: m.group(1) for k, v in env.items() if (m := _KEY_REF.match(str(v)))}
    key_vars = [k for k in keys if k.endswith("_API_KEY") and k != model_var]
    if len(key_vars) != 1:
        raise _refuse(f"task.toml [verifier.env]: {len(key_vars)} API keys as ${{VAR}}, not one")
    for var in env:
        if var not in (key_vars[0], model_var):
            raise _refuse(f"task.toml [verifier.env] {var}: not the judge's key or model")
    name = str(env[model_var]) if model_var in env else _string(model_node)
    if not name:
        raise _refuse(f"{rel}: the model is neither a string nor a [verifier.env] variable")
    question = _question(found.create)
    if question is None:
        raise _refuse(f"{rel}: messages has no prompt text before its first placeholder")
    if not found.files:
        raise _refuse(f"{rel}: opens no absolute path the agent could have left")
    if len(found.rewards) > 1:
        raise _refuse(f"{rel}: writes {len(found.rewards)} rewards, a criterion is one score")
    reward = found.rewards[0] if found.rewards else "reward"
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", reward):
        raise _refuse(f"{rel}: its reward's name {reward!r} is not a criterion id")
    low, high = found.bounds
    if found.thresholds or not low < 1.0 <= high:
        raise _refuse(f"{rel}: compares its score with a threshold of its own or scores below 1")
    model: dict[str, Any] = {
        "name": name,
        "base_url": BASE_URL,
        "api": "anthropic",
        "api_key_env": keys[key_vars[0]],
    }
    for setting in ("max_tokens", "temperature"):
        value = _number(keywords.get(setting))
        if value is not None:
            model[setting] = int(value) if setting == "max_tokens" else value
    criterion: dict[str, Any] = {"id": reward, "text": question}
    criterion |= {"scale": "numeric", "min": low, "max": high, "pass_at": 1.0}
    return {
        "type": "judge",
        "api": "messages",
        "model": model,
        "reads": [],
        "files": found.files,
        "criteria": [criterion],
    }


__all__ = ["BASE_URL", "BASE_URL_VAR", "Refused", "judge_grader", "script_of"]
