"""Links in the agent's files that would make the grader read what is not the agent's.

Graders read the agent's files as the grader (root on Docker), in a grading sandbox that
holds what the agent's never did: the harness's material (``/opt/harness``), a Harbor
verifier's tests and reward directory (``/tests``, ``/logs``), and, for a task graded in an
environment of its own (Harbor's separate verifier), that image's whole file system. A link
the agent left pointing there is read through by the tests (an artifact linked to the
verifier's expected file "matches" it). Before the agent's files go into a grading sandbox,
such links are left out (the path is then absent, as if the agent never made it):

* every link that resolves into a grader's place (``GRADER_PATHS``);
* in a grading environment of the task's own, every link that resolves outside the paths
  taken out of the agent's sandbox (its targets there are another image's files).

Links are followed through the archive's own links (``d/../x`` with ``d`` a link is where
the kernel would go, not where the text says); the image's own links are taken as plain
directories.

A task graded in place has no archive: its live sandbox's links into the grader's places
(in the work dir and every place its user may write) are removed by ``UNLINK_IN_PLACE``
after the sweep, before any test runs.
"""

from __future__ import annotations

import posixpath

from harness.sandbox.grading_material import GRADING_ROOT
from harness.sandbox.workproduct import WorkProduct, new_archive

GRADER_PATHS = (GRADING_ROOT, "/tests", "/logs")
"""Where grading puts what only the grader may read: the harness's material, and a Harbor
verifier's tests and reward directory (``harness.importers.harbor.TEST_COMMAND``)."""
MAX_HOPS = 40  # as the kernel's limit on links followed in one lookup

_PLACES = "|".join(f"{p}|{p}/*" for p in GRADER_PATHS)
UNLINK_IN_PLACE = (
    'for d in "$HARNESS_WORKDIR" /tmp /var/tmp /dev/shm /home; do [ -d "$d" ] || continue; '
    'find "$d" -xdev -type l -print0 2>/dev/null | '
    "while IFS= read -r -d '' l; do t=$(readlink -m -- \"$l\") || continue; "
    f'case "$t" in {_PLACES}) rm -f -- "$l" ;; esac; done; done; true'
)
"""Run in a swept sandbox graded in place, as the agent's user (the links and their
directories are its): remove every link that resolves (as the kernel follows it:
``readlink -m``) into a grader's place."""


def resolve(name: str, links: dict[str, str]) -> str | None:
    """Where the link at archive path ``name`` leads, as a normalized absolute path,
    followed through ``links`` (archive path -> target); None: a loop."""
    start = links[name]
    base = "" if start.startswith("/") else posixpath.dirname(name)
    parts = [p for p in f"{base}/{start}".split("/") if p not in ("", ".")]
    done: list[str] = []
    hops = 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            if done:
                done.pop()
            continue
        done.append(part)
        target = links.get("/".join(done))
        if target is None:
            continue
        hops += 1
        if hops > MAX_HOPS:
            return None
        done.pop()
        if target.startswith("/"):
            done = []
        parts = [p for p in target.split("/") if p not in ("", ".")] + parts
    return "/" + "/".join(done)


def _under(path: str, roots: tuple[str, ...] | list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def unsafe_links(product: WorkProduct, foreign: bool) -> set[str]:
    """The archive paths of the links to leave out (see the module doc)."""
    links = {m.name.rstrip("/"): m.linkname for m, _ in product.members() if m.issym()}
    out = set()
    for name in links:
        target = resolve(name, links)
        if (
            target is None
            or _under(target, GRADER_PATHS)
            or foreign
            and not _under(target, product.roots)
        ):
            out.add(name)
    return out


def confined(product: WorkProduct, foreign: bool) -> WorkProduct:
    """Blocking: ``product`` without its unsafe links (a new archive; the caller closes it,
    and still closes ``product``)."""
    drop = unsafe_links(product, foreign)
    out, tar = new_archive("harness-confined-")
    safe = WorkProduct(out, product.workdir, list(product.roots), list(product.missing))
    try:
        with tar:
            for member, data in product.members():
                if member.name.rstrip("/") not in drop:
                    tar.addfile(member, data)
    except BaseException:
        safe.close()
        raise
    return safe


__all__ = ["GRADER_PATHS", "UNLINK_IN_PLACE", "confined", "resolve", "unsafe_links"]
