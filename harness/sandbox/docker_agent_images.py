"""Images for agent programs: an environment's pinned image plus one agent program.

For each (environment, program build) a run needs (a ready-made agent's CLI, or your own
program), ``bake_agent`` builds ``FROM`` the environment's pinned image id an image that adds
exactly one layer: the CLI's executable at ``AgentBuild.path``, or your program's folder at
``AgentBuild.install_path`` (below ``/opt/harness/agents``, root-owned). The build
context is a tar of a Dockerfile and that one file, made here; the build has no network
and pulls nothing (the registry download happened on the host, ``AgentBuild.fetch``).

The image is labelled with its base image id, the package spec and the path, tagged
``harness-env/<environment>:<cli>-<version>-<base id prefix>``, and reused by any later run
that asks for the same labels, so its id is stable across runs (as the task image's is).
It overrides the files-bake label it would inherit, so it is never mistaken for its base.
"""

from __future__ import annotations

import io
import json
import logging
import tarfile
import tempfile

from harness.errors import EnvironmentBuildError, SandboxError
from harness.sandbox.base import AgentBuild
from harness.sandbox.docker_images import ENV_LABEL, FILES_KEY_LABEL, slug

log = logging.getLogger(__name__)

BASE_LABEL = "harness.agent.base"
SPEC_LABEL = "harness.agent.npm"
PATH_LABEL = "harness.agent.path"
BAKE_LABEL = "harness.agent.bake"
BAKE_VERSION = "1"  # bump when what an agent image holds changes


def agent_tag(environment: str, base_id: str, build: AgentBuild) -> str:
    """The predictable tag of the agent image of ``build`` on ``base_id``."""
    return f"harness-env/{slug(environment)}:{slug(build.key)}-{base_id.split(':')[-1][:12]}"


def labels(environment: str, base_id: str, build: AgentBuild) -> dict[str, str]:
    return {
        BASE_LABEL: base_id,
        SPEC_LABEL: build.spec,
        PATH_LABEL: build.path,
        BAKE_LABEL: BAKE_VERSION,
        ENV_LABEL: environment,
        FILES_KEY_LABEL: "",  # the base's files-bake key must not find this image
    }


def find_agent_image(client, environment: str, base_id: str, build: AgentBuild) -> str | None:
    """The id of an existing agent image with exactly these labels, else None."""
    wanted = labels(environment, base_id, build)
    del wanted[FILES_KEY_LABEL]  # an empty value cannot be filtered on
    found = client.images.list(filters={"label": [f"{k}={v}" for k, v in wanted.items()]})
    return found[0].id if found else None


def write_context(out, base_id: str, build: AgentBuild, exe_path, labelled: dict[str, str]):
    """Write the build context to the file ``out``: a tar of the Dockerfile and the
    executable (root-owned, mode 0755) or, for a program folder, the folder (root-owned,
    folders and executables 0755, other files 0644), nothing else."""
    label_line = " ".join(f"{json.dumps(k)}={json.dumps(v)}" for k, v in labelled.items())
    dockerfile = f"FROM {base_id}\nCOPY agent {build.install_path}\nLABEL {label_line}\n".encode()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size, info.mode = len(dockerfile), 0o644
        tar.addfile(info, io.BytesIO(dockerfile))

        def root_owned(ti: tarfile.TarInfo) -> tarfile.TarInfo:
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = ""
            runnable = ti.isdir() or not build.tree or ti.mode & 0o100
            ti.mode = 0o755 if runnable else 0o644
            return ti

        tar.add(str(exe_path), arcname="agent", recursive=build.tree, filter=root_owned)


def bake_agent(client, environment: str, base_id: str, build: AgentBuild) -> str:
    """The id of ``base_id`` plus ``build``'s executable, built once and then reused.

    Raises ``EnvironmentBuildError`` when the CLI cannot be fetched or the build is refused
    (the run cannot start), ``SandboxError`` when the daemon fails."""
    import docker.errors
    import requests.exceptions

    found = find_agent_image(client, environment, base_id, build)
    if found is not None:
        return found
    exe = build.fetch()
    tag = agent_tag(environment, base_id, build)
    log.info("environment '%s': building %s with %s", environment, tag, build.spec)
    what = f"environment '{environment}': building its image with {build.spec}"
    with tempfile.TemporaryFile() as context:
        write_context(context, base_id, build, exe, labels(environment, base_id, build))
        context.seek(0)
        try:
            image, _logs = client.images.build(
                fileobj=context,
                custom_context=True,
                tag=tag,
                network_mode="none",
                pull=False,
                rm=True,
                forcerm=True,
            )
        except docker.errors.BuildError as exc:
            raise EnvironmentBuildError(f"{what} failed: {exc.msg}") from exc
        except docker.errors.APIError as exc:
            if exc.is_client_error():
                raise EnvironmentBuildError(f"{what} was refused: {exc.explanation}") from exc
            raise SandboxError(f"{what} failed: {exc}") from exc
        except requests.exceptions.RequestException as exc:
            raise SandboxError(f"{what}: Docker daemon unreachable: {exc}") from exc
    return image.id


__all__ = ["agent_tag", "bake_agent", "find_agent_image", "labels"]
