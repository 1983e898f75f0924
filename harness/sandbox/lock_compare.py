"""Compare a lock file's environment entries with freshly computed ones.

Backend-neutral: Docker's entries pin image ids and the CLI images built from them, bwrap's
pin each CLI executable's hash; both are plain dicts written by the backend's
``lock_entries``, and both are checked here, one human-readable line per mismatch.
"""

from __future__ import annotations

import re

_HEX = re.compile(r"^(sha256:)?([0-9a-f]{12})[0-9a-f]{52}$")


def short(value: object) -> object:
    """An image id or digest as messages show it (``sha256:`` and 12 hex digits)."""
    m = _HEX.match(value) if isinstance(value, str) else None
    return f"{m.group(1) or ''}{m.group(2)}" if m else value


def check_lock(
    locked: dict[str, dict], current: dict[str, dict], because: dict[str, str] | None = None
) -> list[str]:
    """Compare a lock file's entries with freshly computed ones (both from ``lock_entries``).

    Returns one human-readable line per mismatch, each naming the environment; an empty list
    means every environment in ``current`` resolves exactly as locked. Environments present
    only in ``locked`` are ignored (a suite may run a subset). Checked: the pinned image id,
    the recipe image id, every base image id, the files digest, and each agent CLI's package
    spec and image (an agent CLI only in ``locked`` is ignored too), and the same of each
    service (named ``<environment>--<service>``). ``because``: per
    environment, the files of its folder that changed; when its image changed, that one
    line replaces the image ids and digests that differ.
    """
    problems: list[str] = []
    for name in sorted(current):
        now = current[name]
        was = locked.get(name)
        if was is None:
            problems.append(f"environment '{name}': not in the lock file")
            continue
        keys = ("image_id", "recipe_image_id", "files_digest")
        differ = [k for k in keys if was.get(k) != now.get(k)]
        why = (because or {}).get(name)
        if differ and why:
            problems.append(f"environment '{name}': {why} since the lock was written")
        else:
            problems += [
                f"environment '{name}': {k} is {short(now.get(k))} but the lock says "
                f"{short(was.get(k))}"
                for k in differ
            ]
        was_bases, now_bases = was.get("base_images") or {}, now.get("base_images") or {}
        for ref in sorted(set(was_bases) | set(now_bases)):
            a = (was_bases.get(ref) or {}).get("id")
            b = (now_bases.get(ref) or {}).get("id")
            if a != b:
                problems.append(
                    f"environment '{name}': base image '{ref}' is {short(b)} but the lock says "
                    f"{short(a)}"
                )
        problems += agent_mismatches(name, was.get("agents") or {}, now.get("agents") or {})
        # Each service beside it is checked as an environment of its own (docker_services).
        problems += check_lock(
            {f"{name}--{k}": v for k, v in (was.get("services") or {}).items()},
            {f"{name}--{k}": v for k, v in (now.get("services") or {}).items()},
        )
    return problems


def agent_mismatches(
    name: str,
    was: dict[str, dict],
    now: dict[str, dict],
    fields: tuple[str, ...] = ("npm", "image_id", "sha256"),
) -> list[str]:
    """One line per agent CLI of environment ``name`` whose ``fields`` (package spec, image
    id on Docker, executable's hash on bwrap) changed or that the lock (``was``) does not
    hold."""
    out = []
    for key in sorted(now):
        if key not in was:
            has = f" (it has {', '.join(sorted(was))})" if was else ""
            out.append(
                f"environment '{name}': agent CLI {key} ({now[key].get('npm')}) is not in the "
                f"lock file{has}"
            )
            continue
        for field_ in fields:
            if was[key].get(field_) != now[key].get(field_):
                out.append(
                    f"environment '{name}': agent CLI {key} {field_} is "
                    f"{short(now[key].get(field_))} but the lock says {short(was[key].get(field_))}"
                )
    return out


__all__ = ["agent_mismatches", "check_lock"]
