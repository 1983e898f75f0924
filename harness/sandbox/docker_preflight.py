"""Before any image is built: every image the run's environments start from is here, or is
pulled now. Offline (no registry), a suite of prebuilt images (Terminal-Bench's
``docker_image``) fails here with one line per missing image, naming its environments,
instead of one build error at a time or a run of failed trials."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from harness.errors import EnvironmentBuildError
from harness.sandbox.base import Environment
from harness.sandbox.docker_images import base_images

log = logging.getLogger(__name__)


def check_base_images(client, environments: Iterable[Environment], pull: bool) -> None:
    """Pull each missing image once (when pulling is allowed); raise
    ``EnvironmentBuildError`` listing, one line each, the images still missing."""
    missing: dict[str, list[str]] = {}
    for env in environments:
        for ref, found in base_images(client, env).items():
            if found["id"] is None:
                missing.setdefault(ref, []).append(env.name)
    failed: list[str] = []
    for ref, names in missing.items():
        why = "pulling is off"
        if pull:
            try:
                log.info("pulling %s (environment '%s')", ref, names[0])
                client.images.pull(ref)
                continue
            except Exception as exc:  # no registry, no such image, no network
                said = getattr(exc, "explanation", None) or str(exc)
                why = f"pulling it failed: {str(said).splitlines()[0][:120]}"
        more = f" and {len(names) - 1} more" if len(names) > 1 else ""
        failed.append(
            f"image '{ref}' (environment '{names[0]}'{more}) is not present locally; {why}"
        )
    if failed:
        raise EnvironmentBuildError(
            f"{len(failed)} image(s) the environments need are missing:\n" + "\n".join(failed)
        )
