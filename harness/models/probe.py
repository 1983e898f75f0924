"""Every model endpoint a run will call answers before the run row is written.

Each distinct endpoint (base URL, API kind and key variable) of the arms' models and the
tasks' model-backed simulated users is asked once, all at the same time, for its model list
(``GET {base_url}/models`` with the key in the API's own header; no tokens spent), with a
short timeout. What the answer means:

- no answer (connection refused, unknown host, TLS failure, timeout) → ``EndpointUnavailable``:
  the run does not start (exit 5), one line naming who uses the endpoint and its URL;
- 401 or 403 → ``EndpointUnavailable`` too: the endpoint refused the key, and every call of
  every trial would;
- anything else proves the endpoint is there. A 404 (no model list at that path) or a list
  without the arm's model only warns: some servers list no models or only full names, and
  the calls themselves are the judge.

Endpoints whose key variable is unset (a simulated user's model the agent may never call)
are probed for reachability only.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.config.models import ModelSettings
    from harness.resolve import Resolved

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 5.0
"""Seconds an endpoint has to accept the connection and answer the model list."""


class EndpointUnavailable(HarnessError):
    """A model endpoint did not answer, or refused the key, before the run (exit 5)."""


@dataclass
class Endpoint:
    """One distinct model endpoint and who in the suite uses it."""

    settings: ModelSettings
    users: list[str] = field(default_factory=list)

    @property
    def who(self) -> str:
        more = len(self.users) - 1
        return self.users[0] + (f" (and {more} more)" if more > 0 else "")


def endpoints(resolved: Resolved) -> list[Endpoint]:
    """The distinct endpoints of the arms' models, the tasks' simulated users' models and
    their graders' models (judges)."""
    from harness.models.settings import expand_env

    found: dict[tuple[str, str, str | None], Endpoint] = {}

    def add(model: ModelSettings, who: str) -> None:
        settings = expand_env(model)
        key = (settings.base_url.rstrip("/"), settings.api, settings.api_key_env)
        found.setdefault(key, Endpoint(settings)).users.append(who)

    for arm in resolved.suite.arms:
        if arm.model is not None:
            add(arm.model, f"arm '{arm.name}'")
    for loaded in resolved.tasks:
        user = loaded.task.user
        if user is not None and user.model is not None:
            add(user.model, f"task '{loaded.task.id}' simulated user")
        for grader in resolved.graders.get(loaded.task.id, []):
            for model in grader.params.models():
                add(model, f"task '{loaded.task.id}' {grader.type_name} grader")
    return list(found.values())


async def probe_endpoints(resolved: Resolved, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Probe every endpoint at once; raise ``EndpointUnavailable`` for the first that
    fails (in suite order), log a warning for each doubtful answer."""
    targets = endpoints(resolved)
    if not targets:
        return
    results: list[str | None] = [None] * len(targets)

    async def one(i: int) -> None:
        results[i] = await _probe(targets[i], timeout_s)

    async with anyio.create_task_group() as tg:
        for i in range(len(targets)):
            tg.start_soon(one, i)
    for failure in results:
        if failure is not None:
            raise EndpointUnavailable(failure)


async def _probe(endpoint: Endpoint, timeout_s: float) -> str | None:
    """The failure line for ``endpoint``, or None when it answered (warnings are logged)."""
    import httpx

    s = endpoint.settings
    base = s.base_url.rstrip("/")
    url = f"{base}/models"
    key = os.environ.get(s.api_key_env) if s.api_key_env else None
    headers: dict[str, str] = {}
    if s.api == "anthropic":
        headers["anthropic-version"] = "2023-06-01"
        if key:
            headers["x-api-key"] = key
    elif key:
        headers["Authorization"] = f"Bearer {key}"
    where = f"{endpoint.who}: model endpoint {base}"
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s)) as client:
            response = await client.get(url, headers=headers)
    except httpx.TimeoutException:
        return f"{where} did not answer within {timeout_s:g}s (GET {url}); check model.base_url"
    except httpx.HTTPError as exc:
        text = str(exc).replace(key, "***") if key else str(exc)
        return (
            f"{where} is unreachable ({type(exc).__name__}: {text or 'no detail'}); "
            "check model.base_url"
        )
    status = response.status_code
    if status in (401, 403) and key:
        return (
            f"{where} refused the key in ${s.api_key_env} (HTTP {status} to GET {url}); "
            "check the key and model.api_key_env"
        )
    if status == 404:
        log.warning(
            "%s answered 404 to GET %s: if its calls fail, check that base_url ends where the "
            "API's paths begin (most end in /v1)",
            where,
            url,
        )
    elif status < 300:
        _check_listed(endpoint, response, where)
    return None


def _check_listed(endpoint: Endpoint, response: object, where: str) -> None:
    """Warn when the endpoint lists its models and the suite's name is not among them."""
    import httpx

    assert isinstance(response, httpx.Response)
    try:
        data = response.json()
    except ValueError:
        return
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        return
    ids = {str(m.get("id")) for m in items if isinstance(m, dict) and m.get("id")}
    name = endpoint.settings.name
    if ids and name not in ids and name.rsplit("/", 1)[-1] not in ids:
        sample = ", ".join(sorted(ids)[:3])
        log.warning(
            "%s does not list model '%s' (it lists %d, e.g. %s): a wrong name fails every call",
            where,
            name,
            len(ids),
            sample,
        )


__all__ = ["Endpoint", "EndpointUnavailable", "endpoints", "probe_endpoints"]
