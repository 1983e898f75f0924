"""Links in the agent's files that grading leaves out (``harness.sandbox.product_links``):
into the grader's places always, outside what was taken out for a separate verifier, and
where the kernel would really go (through the archive's own links), not where the text says."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

from harness.sandbox.product_links import confined, resolve, unsafe_links
from harness.sandbox.workproduct import tar_host_paths


def _product(tmp_path: Path, links: dict[str, str], roots=("/app",)):
    """An archive of a sandbox whose ``/app`` holds a file and ``links`` (name -> target)."""
    app = tmp_path / "app"
    (app / "sub").mkdir(parents=True)
    (app / "sub" / "real.txt").write_text("mine\n")
    for name, target in links.items():
        os.symlink(target, app / name)
    return tar_host_paths("/app", list(roots), lambda p: str(tmp_path) + p)


LINKS = {
    "venv_python": "/usr/bin/python3",  # an absolute link into the image: kept
    "inside": "sub/real.txt",
    "up_inside": "../app/sub/real.txt",
    "tests": "/tests/test.sh",  # a Harbor verifier's tests
    "hidden": "/opt/harness/hidden/test.sh",
    "reward": "../logs/verifier/reward.txt",
    "root": "/",
    "via_root": "root/tests/expected.txt",  # the text stays in /app; the kernel goes to /tests
    "here": "/app",
    "dots": "here/../tests/x",  # /app/here/../tests/x by the text; /tests/x by the kernel
    "loop_a": "loop_b",
    "loop_b": "loop_a",
}


def test_links_into_the_graders_places_are_left_out(tmp_path):
    product = _product(tmp_path, LINKS)
    try:
        drop = {n.removeprefix("app/") for n in unsafe_links(product, foreign=False)}
        assert drop == {"tests", "hidden", "reward", "via_root", "dots", "loop_a", "loop_b"}
        safe = confined(product, foreign=False)
        try:
            with tarfile.open(safe.path) as tar:
                names = {m.name.removeprefix("app/") for m in tar}
            assert "sub/real.txt" in names and "venv_python" in names and "tests" not in names
            assert safe.roots == product.roots
        finally:
            safe.close()
    finally:
        product.close()


def test_a_separate_verifier_gets_only_links_within_what_was_taken_out(tmp_path):
    product = _product(tmp_path, {"total.txt": "/opt/verifier/expected.txt", **LINKS})
    try:
        kept = set(LINKS) | {"total.txt"}
        kept -= {n.removeprefix("app/") for n in unsafe_links(product, foreign=True)}
        assert kept == {"inside", "up_inside", "here"}
    finally:
        product.close()


def test_resolve_follows_the_archives_links():
    links = {"app/d": "/app/a/b", "app/x": "d/../c", "app/y": "d/../../../etc", "app/s": "/"}
    assert resolve("app/x", links) == "/app/a/c"
    assert resolve("app/y", links) == "/etc"
    assert resolve("app/s", links) == "/"
