"""How much of Harbor's example tasks the harness takes: imported, runnable here, refused by
reason (the counts in docs/interop.md).

    python benchmarks/harbor_examples.py [PATH]   # default: the pinned copy
                                                  # ($HARNESS_THIRD_PARTY/harbor/...)

Imports every task under PATH (``harness import harbor``), then loads the suite with open
egress allowed and resolves it for Docker (what ``harness run --allow-internet`` checks
before anything is built), then asks the local daemon which base images every imported
environment (and each of its services) starts from are present: a task whose images are all
here runs on this machine; the others run where a registry is reachable and refuse here at
preflight, one line per missing image. Refusals are grouped by the feature named before the
first parenthesis of the one-line reason.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.config.loader import load_suite  # noqa: E402
from harness.importers.harbor import import_harbor  # noqa: E402
from harness.resolve import resolve  # noqa: E402
from harness.sandbox.docker_images import base_images  # noqa: E402
from harness.sandbox.docker_services import service_environments  # noqa: E402

THIRD_PARTY = Path(os.environ.get("HARNESS_THIRD_PARTY", REPO.parent / "shared" / "third_party"))
PINNED = THIRD_PARTY / "harbor" / "examples" / "tasks"


def feature(reason: str) -> str:
    """The refusal's feature: its words before any parenthesis or colon."""
    return re.split(r" \(|: ", reason, maxsplit=1)[0]


def main(path: Path) -> None:
    import docker

    with tempfile.TemporaryDirectory() as tmp:
        done = import_harbor(path, Path(tmp))
        assert done.suite is not None, "nothing imported"
        config = load_suite(done.suite, {"allow_internet": True})
        resolve(config, "docker")
        client = docker.from_env()
        missing_by_task: dict[str, list[str]] = {}
        for loaded in config.tasks:
            env = config.environments[loaded.task.environment or ""]
            envs = [env, *service_environments([env])]
            gone = [ref for e in envs for ref, f in base_images(client, e).items() if not f["id"]]
            missing_by_task[loaded.task.id] = sorted(set(gone))
    total = len(done.imported) + len(done.refused)
    here = [t for t, gone in missing_by_task.items() if not gone]
    print(f"{total} Harbor example tasks read from {path}")
    print(f"imported {len(done.imported)} (all load and resolve for Docker with --allow-internet)")
    print(f"  {len(done.open_egress)} of them have Harbor's public network (--allow-internet)")
    print(f"  runnable on this machine now (every base image present): {len(here)}")
    images = collections.Counter(ref for gone in missing_by_task.values() for ref in gone)
    for ref, n in images.most_common():
        print(f"  missing here: {ref} (needed by {n} task(s))")
    print(f"refused {len(done.refused)}:")
    reasons = collections.Counter(feature(r) for r in done.refused.values())
    for reason, n in reasons.most_common():
        print(f"  {n:>3}  {reason}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, default=PINNED)
    main(parser.parse_args().path)
