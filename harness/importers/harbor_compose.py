"""Harbor's multi-container environments (``environment/docker-compose.yaml``) as an
environment's ``services`` (``harness.sandbox.docker_services``).

Harbor merges the task's compose file over its own base file, whose ``main`` service is
the agent's container; the task's file adds sidecars and a few overrides of ``main``.
What is read (everything else is refused, naming the key):

- a sidecar's ``image`` (a ref) or ``build`` (``context``, optional ``dockerfile``),
  ``command``, ``entrypoint`` (prepended to the command), ``environment``,
  ``healthcheck`` (``test``, ``interval``, ``timeout``, ``retries``, ``start_period``),
  ``depends_on`` and named ``volumes``; ``expose`` says nothing the trial network does not
  already give (every port of a sidecar is reachable from the agent's container by the
  sidecar's name);
- ``main``'s ``depends_on`` (the agent starts after every sidecar is up and healthy,
  which is what ``service_started`` and ``service_healthy`` ask) and named ``volumes``;
- Harbor's artifacts directory (``${HOST_ARTIFACTS_PATH}:${ENV_ARTIFACTS_PATH}``): a
  volume shared with ``main`` at ``/logs/artifacts``.

Sidecars are on the trial's own network and reach nothing else, whatever the task's
network policy: a sidecar with networks of its own (``networks``, ``network_mode``) is
refused, as are published ``ports``. Honouring one would put a container the agent talks to
on a network the agent's policy denies it (Harbor's ``compose-sidecar-uncontrolled-network``
gives its helper the public network beside a ``no-network`` agent): whether that container
relays for the agent cannot be known from the compose file, so the agent would get more
network than its task allows; left off the trial's network, it would not be the sidecar
compose describes (reachable by its name).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml

ARTIFACTS = "/logs/artifacts"
_HARBOR_ARTIFACTS = "${HOST_ARTIFACTS_PATH}:${ENV_ARTIFACTS_PATH}"
_SIDE_KEYS = {
    "image", "build", "command", "entrypoint", "environment", "healthcheck", "depends_on",
    "volumes", "expose",
}  # fmt: skip
_MAIN_KEYS = {"depends_on", "volumes"}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")


class Refused(Exception):
    """The compose file asks for what the harness does not do (the one-line reason)."""


def compose_file(environment_dir: Path) -> Path | None:
    for name in ("docker-compose.yaml", "docker-compose.yml"):
        if (environment_dir / name).is_file():
            return environment_dir / name
    return None


def _seconds(text: object, where: str) -> float:
    """A compose duration (``2s``, ``1m30s``, ``500ms``) in seconds."""
    parts = _DURATION.findall(str(text))
    if not parts or "".join(n + u for n, u in parts) != str(text).replace(" ", ""):
        raise Refused(f"a docker-compose duration it cannot read ({where}: {text!r})")
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    return sum(float(n) * scale[u] for n, u in parts)


def _argv(value: object, where: str) -> list[str]:
    if isinstance(value, str):
        return shlex.split(value.replace("$$", "$"))
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return [str(v).replace("$$", "$") for v in value]
    raise Refused(f"a docker-compose {where} that is not a string or a list")


def _health(value: dict[str, Any], where: str) -> dict[str, Any]:
    test = value.get("test")
    if isinstance(test, list) and test and test[0] in ("CMD", "CMD-SHELL"):
        command = [str(t) for t in test[1:]]
        if test[0] == "CMD-SHELL":
            command = ["sh", "-c", " ".join(command)]
    elif isinstance(test, str):
        command = ["sh", "-c", test]
    else:
        raise Refused(f"a docker-compose healthcheck it cannot read ({where}.test)")
    out: dict[str, Any] = {"command": command}
    for key, ours in (("interval", "interval_s"), ("timeout", "timeout_s")):
        if key in value:
            out[ours] = _seconds(value[key], f"{where}.{key}")
    if "start_period" in value:
        out["start_period_s"] = _seconds(value["start_period"], f"{where}.start_period")
    if "retries" in value:
        out["retries"] = int(value["retries"])
    return out


def _volumes(value: object, where: str, named: set[str]) -> dict[str, str]:
    """Named volumes (and Harbor's artifacts dir) -> mount path."""
    out: dict[str, str] = {}
    for item in value if isinstance(value, list) else [value]:
        text = str(item)
        if text == _HARBOR_ARTIFACTS:
            out["artifacts"] = ARTIFACTS
            continue
        name, _, path = text.partition(":")
        if name not in named or not path.startswith("/") or path.count(":") > 0:
            raise Refused(f"a docker-compose volume that is not a named volume ({where}: {text})")
        out[name] = path
    return out


def _depends(value: object) -> list[str]:
    if isinstance(value, list | dict):
        return [str(v) for v in value]
    return []


def _sidecar(name: str, body: dict[str, Any], named: set[str]) -> dict[str, Any]:
    where = f"services.{name}"
    for key in body:
        if key in ("networks", "network_mode"):
            raise Refused(
                f"a sidecar with a network of its own ({where}.{key}): every sidecar stays "
                "on the trial's internal network, since one the agent reaches that reaches "
                "elsewhere could relay for it, giving it more network than its task's"
            )
        if key not in _SIDE_KEYS:
            raise Refused(f"docker-compose setting {where}.{key}")
    out: dict[str, Any] = {}
    if "build" in body:
        build = body["build"]
        build = {"context": build} if isinstance(build, str) else dict(build or {})
        extra = set(build) - {"context", "dockerfile"}
        if extra:
            raise Refused(f"docker-compose setting {where}.build.{sorted(extra)[0]}")
        out["image"] = {"dockerfile": str(build.get("dockerfile", "Dockerfile"))}
        out["context"] = str(build.get("context", "."))
    elif "image" in body:
        out["image"] = {"ref": str(body["image"])}
    else:
        raise Refused(f"a docker-compose service with neither image nor build ({where})")
    command = _argv(body["command"], f"{where}.command") if "command" in body else None
    if "entrypoint" in body:
        command = [*_argv(body["entrypoint"], f"{where}.entrypoint"), *(command or [])]
    if command is not None:
        out["command"] = command
    env = body.get("environment") or {}
    if isinstance(env, list):
        env = dict(str(e).partition("=")[::2] for e in env)
    out["env"] = {str(k): str(v) for k, v in env.items()}
    if "healthcheck" in body:
        out["healthcheck"] = _health(dict(body["healthcheck"]), f"{where}.healthcheck")
    out["depends_on"] = [d for d in _depends(body.get("depends_on")) if d != "main"]
    if "volumes" in body:
        out["volumes"] = _volumes(body["volumes"], f"{where}.volumes", named)
    return out


def services(environment_dir: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """The environment's ``services`` and ``volumes`` read from its compose file (both
    empty when it has none); raises ``Refused`` with the reason."""
    path = compose_file(environment_dir)
    if path is None:
        return {}, {}
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise Refused(f"a readable docker-compose file ({exc})") from None
    for key in doc:
        if key not in ("services", "volumes") and not str(key).startswith("x-"):
            raise Refused(f"docker-compose setting {key}")
    declared: dict[str, Any] = dict(doc.get("volumes") or {})
    named = set(map(str, declared))
    if any(declared.values()):
        raise Refused("docker-compose volumes with settings (volumes.*)")
    sidecars: dict[str, Any] = {}
    volumes: dict[str, str] = {}
    for name, body in (doc.get("services") or {}).items():
        body = dict(body or {})
        if name == "main":
            for key in body:
                if key not in _MAIN_KEYS:
                    raise Refused(f"docker-compose setting services.main.{key}")
            volumes.update(_volumes(body.get("volumes", []), "services.main.volumes", named))
            continue
        sidecars[str(name)] = _sidecar(str(name), body, named)
        if "artifacts" in sidecars[str(name)].get("volumes", {}):
            volumes["artifacts"] = ARTIFACTS  # Harbor mounts its artifacts dir in main too
    for name, sidecar in sidecars.items():
        for volume in sidecar.get("volumes", {}):
            if volume not in volumes:
                raise Refused(
                    f"a docker-compose volume shared only between sidecars "
                    f"(services.{name}.volumes: {volume})"
                )
    return sidecars, volumes


def service_artifacts(
    artifacts: list[object], collect: object, sidecars: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """Harbor's artifacts of sidecars (``{source, service}`` tables of ``artifacts``) and
    its ``[[verifier.collect]]`` commands as a task's ``grading.services`` (service ->
    ``paths``, ``collect``, ``timeout_s``: the largest of its commands'); raises
    ``Refused``. A plain path is the agent's (``grading.files``), not read here."""
    out: dict[str, dict[str, Any]] = {}

    def own(name: object, where: str) -> dict[str, Any]:
        if str(name) not in sidecars:
            raise Refused(f"{where} of a service the compose file does not start ({name})")
        return out.setdefault(str(name), {"paths": [], "collect": []})

    for i, item in enumerate(artifacts):
        if isinstance(item, str):
            continue
        where = f"artifacts[{i}]"
        if not isinstance(item, dict) or set(item) != {"source", "service"}:
            raise Refused(f"artifacts with settings other than source and service ({where})")
        if not str(item["source"]).startswith("/"):
            raise Refused(f"an absolute source for a service's artifact ({where})")
        own(item["service"], f"artifacts from a service ({where})")["paths"].append(
            str(item["source"])
        )
    for i, item in enumerate(collect if isinstance(collect, list) else [collect] * bool(collect)):
        where = f"verifier.collect[{i}]"
        if not isinstance(item, dict) or not set(item) <= {"service", "command", "timeout_sec"}:
            raise Refused(f"a collect hook with service, command and timeout_sec ({where})")
        if "service" not in item or "command" not in item:
            raise Refused(f"a collect hook in a sidecar, not in the agent's container ({where})")
        entry = own(item["service"], f"a collect hook ({where})")
        entry["collect"].append(str(item["command"]))
        timeout = float(item.get("timeout_sec", 30.0))
        entry["timeout_s"] = max(entry.get("timeout_s", 0.0), timeout)
    return out


__all__ = ["ARTIFACTS", "Refused", "compose_file", "service_artifacts", "services"]
