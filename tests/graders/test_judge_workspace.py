"""The work dir a judge explores, read from a real archive of a real directory: paths stay
inside the work dir (absolute, '..', links are refused or shown, never followed), hard
links read inside the archive, caps hold."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graders.judge_workspace import GREP_LIMIT, LIST_LIMIT, PathRefused, WorkView
from harness.sandbox.workproduct import WorkProduct, tar_host_paths

WORKDIR = "/sandbox/work"


def archive_of(root: Path) -> WorkProduct:
    """A real archive of the work dir under ``root`` (the sandbox's / on the host)."""

    def host_of(path: str) -> str:
        return str(root / path.lstrip("/"))

    return tar_host_paths(WORKDIR, ["."], host_of)


@pytest.fixture
def view(tmp_path: Path):
    work = tmp_path / "sandbox" / "work"
    (work / "sub").mkdir(parents=True)
    (work / "report.md").write_text("# Report\nthe total is 42\n")
    (work / "sub" / "data.txt").write_text("alpha\nbeta 42\n")
    (work / "big.txt").write_text("x" * 5000)
    (work / "bad.bin").write_bytes(b"\xff\xfeok")
    (work / "image.png").write_bytes(b"\x89PNG\x00\x00 42 " * 100)
    os.symlink("/etc/passwd", work / "passwd")  # a link the agent left to a host file
    os.symlink("/etc", work / "etc")
    os.link(work / "report.md", work / "same.md")
    (tmp_path / "sandbox" / "outside.txt").write_text("not the agent's work")
    product = archive_of(tmp_path)
    try:
        yield WorkView(product)
    finally:
        product.close()


def test_lists_and_reads_the_work_dir(view: WorkView) -> None:
    listing = view.list_files(".")
    assert "report.md  (25 bytes)" in listing and "sub/" in listing
    assert "passwd -> /etc/passwd  (symbolic link, not followed)" in listing
    assert "outside" not in listing
    assert view.list_files("sub") == "sub/data.txt  (14 bytes)"
    assert view.read_file("report.md", 1000) == "# Report\nthe total is 42\n"
    assert view.read_file("./sub/./data.txt", 1000) == "alpha\nbeta 42\n"
    assert view.read_file("bad.bin", 100) == "\ufffd\ufffdok"
    assert (
        view.read_file("image.png", 100)
        == "image.png: a binary file of 1000 bytes (not shown as text)"
    )
    assert view.grep("42").splitlines() == [
        "report.md:2: the total is 42",
        "same.md:2: the total is 42",
        "sub/data.txt:2: beta 42",
    ]


def test_nothing_outside_the_work_dir_is_read(view: WorkView) -> None:
    for path, why in [
        ("../../etc/passwd", "'..' leads outside"),
        ("../outside.txt", "'..' leads outside"),
        ("/etc/passwd", "absolute paths are outside"),
        ("passwd", "a symbolic link to /etc/passwd"),
        ("etc/passwd", r"etc is a symbolic link \(to /etc\)"),
        ("nothing.txt", "no such file"),
        ("sub", "a directory"),
    ]:
        with pytest.raises(PathRefused, match=why):
            view.read_file(path, 1000)
    # 'etc/' is the link itself: shown as a link, never entered
    assert view.list_files("etc/") == "etc -> /etc  (symbolic link, not followed)"
    with pytest.raises(PathRefused, match="etc is a symbolic link"):
        view.list_files("etc/ssh")
    assert "root:" not in view.grep("root")  # the link is never searched through
    assert view.read_file("same.md", 100).startswith("# Report")  # a hard link: in the archive


def test_caps_hold(view: WorkView, tmp_path: Path) -> None:
    shown = view.read_file("big.txt", 100)
    assert shown.startswith("x" * 100) and "x" * 101 not in shown
    assert "4900 more bytes of big.txt (5000 in all) not shown; read on with offset 100" in shown
    assert view.read_file("big.txt", 100, offset=4950) == "x" * 50

    many = tmp_path / "many" / "sandbox" / "work"
    many.mkdir(parents=True)
    for i in range(LIST_LIMIT + 7):
        (many / f"f{i:04d}.txt").write_text("needle\n")
    product = archive_of(tmp_path / "many")
    try:
        crowded = WorkView(product)
        assert crowded.list_files().endswith("[... 7 more entries not listed]")
        assert len(crowded.list_files().splitlines()) == LIST_LIMIT + 1
        hits = crowded.grep("needle").splitlines()
        assert len(hits) == GREP_LIMIT + 1 and hits[-1].startswith("[stopped at")
    finally:
        product.close()
