"""Harbor's ``COPY --chmod`` on Docker's classic builder (issue 25): the import gives the copied
build context a copy of each source with the mode and drops the flag; the image built by the
daemon's classic API has the same modes as BuildKit's, and a plain ``COPY`` of the same
source keeps its own. BuildKit syntax the rewrite cannot express is refused in one line."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from harness.importers import harbor_dockerfile
from harness.importers.harbor import import_harbor

DOCKERFILE = """\
FROM harness-base:bookworm-1
# a comment --chmod=700 is not an instruction
COPY --chmod=755 test.sh /tests/test.sh
COPY test.sh /plain.sh
COPY --chown=1000:1000 --chmod=0640 \\
     ["conf", "/etc/app/"]
ADD --chmod=700 ./bin/*.sh /opt/bin/
"""


def _context(root: Path) -> Path:
    ctx = root / "ctx"
    (ctx / "conf" / "sub").mkdir(parents=True)
    (ctx / "bin").mkdir()
    (ctx / "test.sh").write_text("#!/bin/sh\necho hi\n")
    (ctx / "conf" / "a.ini").write_text("a=1\n")
    (ctx / "conf" / "sub" / "b.ini").write_text("b=2\n")
    for name in ("one.sh", "two.sh"):
        (ctx / "bin" / name).write_text("#!/bin/sh\n")
    for path in ctx.rglob("*"):
        path.chmod(0o555 if path.is_dir() else 0o444)
    (ctx / "Dockerfile").write_text(DOCKERFILE)
    return ctx


def test_the_rewrite_keeps_every_instruction_and_only_drops_the_flag(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    assert harbor_dockerfile.rewrite(ctx, ctx / "Dockerfile") == 3
    text = (ctx / "Dockerfile").read_text()
    instructions = [line for line in text.splitlines() if not line.startswith("#")]
    assert not any("--chmod" in line for line in instructions)
    assert "COPY .harness-chmod/Dockerfile-3-0/test.sh /tests/test.sh" in text
    assert "COPY test.sh /plain.sh" in text
    assert 'COPY --chown=1000:1000 [".harness-chmod/Dockerfile-5-0/conf", "/etc/app/"]' in text
    assert "ADD .harness-chmod/Dockerfile-7-0/one.sh .harness-chmod/Dockerfile-7-1/two.sh" in text
    own = ctx / ".harness-chmod"
    assert (own / "Dockerfile-3-0" / "test.sh").stat().st_mode & 0o7777 == 0o755
    assert (ctx / "test.sh").stat().st_mode & 0o7777 == 0o444  # the source is left alone
    assert (own / "Dockerfile-5-0" / "conf" / "sub" / "b.ini").stat().st_mode & 0o777 == 0o640
    assert harbor_dockerfile.rewrite(ctx, ctx / "Dockerfile") == 0  # nothing left to do


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("COPY --chmod=u+x test.sh /t", "a --chmod mode that is not octal (Dockerfile:2: u+x)"),
        ("COPY --from=build --chmod=755 /x /x", "--chmod of another stage's files"),
        ("COPY --chmod=755 nothing*.sh /t/", "nothing*.sh matches nothing"),
        ("COPY --chmod=755 ../outside /t", "a --chmod source in the build context"),
        ("ADD --chmod=755 https://example.com/x /x", "--chmod of a URL"),
        ("RUN --mount=type=cache,target=/root/.cache true", "only BuildKit has (Dockerfile:2:"),
        ("COPY --link test.sh /t", "only BuildKit has (Dockerfile:2: --link)"),
        ("RUN <<EOF", "a Dockerfile heredoc"),
    ],
)
def test_what_the_classic_builder_cannot_do_is_refused(
    tmp_path: Path, line: str, reason: str
) -> None:
    (tmp_path / "test.sh").write_text("x")
    (tmp_path / "Dockerfile").write_text(f"FROM harness-base:bookworm-1\n{line}\n")
    with pytest.raises(harbor_dockerfile.Refused) as got:
        harbor_dockerfile.check(tmp_path, tmp_path / "Dockerfile")
    assert reason in str(got.value)
    assert "\n" not in str(got.value)


def test_the_import_refuses_a_task_whose_dockerfile_needs_buildkit(tmp_path: Path) -> None:
    task = tmp_path / "src" / "cached"
    for d in ("environment", "tests", "solution"):
        (task / d).mkdir(parents=True)
    (task / "task.toml").write_text('version = "1.0"\n')
    (task / "instruction.md").write_text("Do it.\n")
    (task / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    (task / "environment" / "Dockerfile").write_text(
        "FROM harness-base:bookworm-1\nRUN --mount=type=cache,target=/c true\n"
    )
    done = import_harbor(tmp_path / "src", tmp_path / "out")
    assert done.refused == {
        "cached": "a Dockerfile flag only BuildKit has (Dockerfile:2: --mount=type=cache,target=/c)"
    }


def test_the_classic_builder_gives_the_modes_buildkit_would(tmp_path: Path, docker_ready) -> None:
    import docker

    ctx = _context(tmp_path)
    harbor_dockerfile.rewrite(ctx, ctx / "Dockerfile")
    client = docker.from_env()
    image, _ = client.images.build(path=str(ctx), rm=True, forcerm=True, pull=False)
    try:
        out = client.containers.run(
            image.id,
            [
                "sh",
                "-c",
                "stat -c '%n %a %U' /tests/test.sh /plain.sh /etc/app/a.ini "
                "/etc/app/sub /etc/app/sub/b.ini /opt/bin/one.sh /opt/bin/two.sh",
            ],  # fmt: skip
            remove=True,
        ).decode()
    finally:
        client.images.remove(image.id, force=True)
    assert out.split("\n")[:7] == [
        "/tests/test.sh 755 root",
        "/plain.sh 444 root",
        "/etc/app/a.ini 640 agent",  # --chown=1000:1000 kept
        "/etc/app/sub 640 agent",
        "/etc/app/sub/b.ini 640 agent",
        "/opt/bin/one.sh 700 root",
        "/opt/bin/two.sh 700 root",
    ]
    assert os.access(ctx / "test.sh", os.R_OK)
    shutil.rmtree(ctx, ignore_errors=True)
