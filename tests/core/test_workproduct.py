"""The agent's work product as data: files state computed on the host from an archive
(byte-safe names, links never followed), state dumps that cannot crash the graders, and
copies into grading sandboxes that cannot escape or plant setuid files."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from harness.config.loader import load_suite
from harness.errors import ConfigError
from harness.sandbox.workproduct import (
    MAX_STATE_DEPTH,
    BadWorkProduct,
    WorkProduct,
    extract_into,
    files_state,
    parse_state,
    reowned,
    replace_host_paths,
    tar_host_paths,
)


def _host_of(root: Path):
    def host_of(path: str) -> Path | None:
        p = Path(path)
        work = Path("/work")
        return root / p.relative_to(work) if p == work or work in p.parents else None

    return host_of


def _tree(root: Path) -> None:
    (root / "etc").mkdir()
    (root / "etc/app.conf").write_text("port=8000\n")
    (root / "etc/app.conf").chmod(0o640)
    os.symlink("/nonexistent", root / "etc/dangling")
    os.symlink("app.conf", root / "etc/link")
    os.mkfifo(root / "etc/fifo")
    bad = os.fsencode(root / "etc") + b"/bad-\xff\xfe"
    with open(bad, "wb") as fh:
        fh.write(b"x")


def test_files_state_from_the_archive_is_exact_and_byte_safe(tmp_path):
    _tree(tmp_path)
    product = tar_host_paths("/work", ["etc", "missing"], _host_of(tmp_path))
    try:
        state = files_state(product, ["etc", "missing"])
    finally:
        product.close()
    files = state["files"]
    assert files["etc/app.conf"] == {
        "type": "file",
        "sha256": hashlib.sha256(b"port=8000\n").hexdigest(),
        "mode": "0o640",
    }
    assert files["etc"]["type"] == "dir"
    assert files["etc/dangling"] == {"type": "link", "target": "/nonexistent"}
    assert files["etc/link"] == {"type": "link", "target": "app.conf"}
    assert files["etc/fifo"]["type"] == "fifo"  # recorded, never opened
    assert files["etc/bad-\\xff\\xfe"]["sha256"] == hashlib.sha256(b"x").hexdigest()
    json.dumps(state).encode("utf-8")  # every name is valid text for any store
    assert product.missing == ["/work/missing"]


@pytest.mark.parametrize(
    "output",
    ["null", "[1, 2]", '"x"', "{", "[" * 200_000 + "]" * 200_000, "not json"],
)
def test_a_dump_that_is_not_a_state_is_refused_without_crashing(output):
    with pytest.raises(BadWorkProduct):
        parse_state(output, "the dump")


def test_a_dump_nested_past_the_limit_is_refused():
    deep = "{}"
    for _ in range(MAX_STATE_DEPTH):
        deep = '{"a": ' + deep + "}"
    with pytest.raises(BadWorkProduct, match="nested"):
        parse_state(deep, "the dump")
    assert parse_state('{"t": {"k": {"f": [1, {"x": null}]}}}', "the dump")["t"]["k"]


def _crafted(tmp_path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> WorkProduct:
    path = tmp_path / "crafted.tar"
    with tarfile.open(path, "w") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return WorkProduct(path, "/work", ["/work"])


def _info(name: str, kind: bytes = tarfile.REGTYPE, **kw) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    for k, v in kw.items():
        setattr(info, k, v)
    return info


def test_a_copy_in_never_follows_a_link_out_of_the_sandbox(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    product = _crafted(
        tmp_path,
        [
            (_info("work", tarfile.DIRTYPE, mode=0o755), None),
            (_info("work/esc", tarfile.SYMTYPE, linkname=str(outside)), None),
            (_info("work/esc/planted", mode=0o644), b"pwned"),
        ],
    )
    dest = tmp_path / "grading" / "work"
    dest.mkdir(parents=True)
    with pytest.raises(BadWorkProduct):
        replace_host_paths(product, ["/work"], "/work", lambda p: dest if p == "/work" else None)
    assert not (outside / "planted").exists()


def test_a_copy_in_drops_setuid_bits_and_keeps_links(tmp_path):
    product = _crafted(
        tmp_path,
        [
            (_info("work", tarfile.DIRTYPE, mode=0o755), None),
            (_info("work/tool", mode=0o4755), b"#!/bin/sh\n"),
            (_info("work/to-etc", tarfile.SYMTYPE, linkname="/etc/passwd"), None),
        ],
    )
    dest = tmp_path / "g" / "work"
    dest.mkdir(parents=True)
    extract_into(product, "/work", dest)
    assert (dest / "tool").stat().st_mode & 0o7777 == 0o755
    assert os.readlink(dest / "to-etc") == "/etc/passwd"
    again = reowned(product, 1000, 1000)
    try:
        with tarfile.open(again) as tar:
            assert {(m.uid, m.gid, m.mode & 0o7000) for m in tar} == {(1000, 1000, 0)}
    finally:
        again.unlink()


def test_a_dump_script_among_the_copied_state_paths_is_refused_at_load(tmp_path):
    env = tmp_path / "environments" / "kv"
    (env / "files" / "tools").mkdir(parents=True)
    (env / "files" / "tools" / "dump.py").write_text("print('{}')\n")
    (env / "environment.yaml").write_text(
        "name: kv\nfiles: files\nstate: {kind: command, command: python3 tools/dump.py, "
        "paths: [tools]}\n"
    )
    (tmp_path / "tasks.yaml").write_text(
        "tasks: [{id: t, instruction: x, environment: kv, graders: "
        "[{type: state_diff, expect_no_change: true}]}]\n"
    )
    (tmp_path / "suite.yaml").write_text(
        "name: s\ntasks: [tasks.yaml]\narms: [{name: a, agent: noop}]\n"
    )
    with pytest.raises(ConfigError, match="state.paths"):
        load_suite(tmp_path / "suite.yaml")
