"""One call to a judge model: the request body in the judge's API, sent through the metering
proxy's upstream code, and what it cost.

Shared by the rubric judge (``graders.judge``) and the pairwise judge
(``harness.pairwise``): both speak chat completions, Responses or Messages, add the real key
in the upstream code (retrying what is transient), and keep their tokens and cost apart
from the agent's.
"""

from __future__ import annotations

from typing import Any, Literal

from harness.config.models import ModelSettings
from harness.errors import ConfigError, GraderError, ModelUnavailable

JudgeAPI = Literal["chat", "responses", "messages"]


def model_setup(model: ModelSettings, api: JudgeAPI) -> dict[str, Any]:
    """The judge endpoint's part of a judge setup: what decides its replies (the API key
    variable and the price do not)."""
    return {
        "model": model.name,
        "base_url": model.base_url.rstrip("/"),
        "api": api,
        "temperature": model.temperature,
        "max_tokens": model.max_tokens,
        "extra": model.extra,
    }


def payload(
    model: ModelSettings, api: JudgeAPI, system: str, prompt: str, seed: int | None
) -> dict[str, Any]:
    """The request body: ``seed`` is sent where the API takes one (chat completions)."""
    body: dict[str, Any] = {"model": model.name, **model.extra}
    if api == "chat":
        body["messages"] = [
            {"role": "system", "content": system},
            {"role": "user", "content": prompt},
        ]
        if model.max_tokens:
            body["max_tokens"] = model.max_tokens
        if seed is not None:
            body["seed"] = seed
    elif api == "responses":
        body["instructions"], body["input"] = system, prompt
        if model.max_tokens:
            body["max_output_tokens"] = model.max_tokens
    else:  # Messages: no seed in the API
        body["system"] = system
        body["messages"] = [{"role": "user", "content": prompt}]
        body["max_tokens"] = model.max_tokens or 1024
    if model.temperature is not None:
        body["temperature"] = model.temperature
    return body


class JudgeCaller:
    """Asks one judge endpoint; the client is made on the first call (its key is read then)."""

    def __init__(self, model: ModelSettings, api: JudgeAPI):
        self.model, self.api = model, api
        self._client: Any = None

    def _chat_client(self) -> Any:
        from harness.models.client import ChatClient

        if self._client is None:
            try:
                self._client = ChatClient(self.model)
            except ConfigError as exc:
                raise GraderError(f"judge model: {exc.message}") from None
        return self._client

    async def ask(
        self, system: str, prompt: str, seed: int | None
    ) -> tuple[str | None, dict[str, Any]]:
        """The reply's text and its spend (tokens in/cached/out, cost_usd, latency_s).

        Raises ``GraderError`` when the judge cannot be reached after its retries or refuses
        the request."""
        from harness.models.wire import APIS

        data, spent = await self.send(payload(self.model, self.api, system, prompt, seed))
        text, _ = APIS[self.api].summary(data)
        return text, spent

    async def send(self, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """One request ``body`` as it is (a judge's conversation with tools grows it): the
        reply's JSON and its spend; ``GraderError`` as ``ask``."""
        from harness.models.pricing import cost
        from harness.models.upstream import send
        from harness.models.wire import APIS

        wire = APIS[self.api]
        client = self._chat_client()
        try:
            reply = await send(client, wire, body, {}, stream=False)
        except ModelUnavailable as exc:
            raise GraderError(f"judge unreachable: {exc}") from None
        if reply.status >= 400 or reply.data is None:
            raise GraderError(
                f"judge model '{self.model.name}' refused the request (HTTP {reply.status}): "
                f"{reply.body[:200].decode(errors='replace')}"
            )
        usage = wire.usage(reply.data)
        spent = {
            "tokens_in": usage.input_tokens if usage.reported else None,
            "tokens_cached": usage.cached_tokens if usage.reported else None,
            "tokens_out": usage.output_tokens if usage.reported else None,
            "cost_usd": cost(usage, self.model.price),
            "latency_s": reply.latency_s,
        }
        return dict(reply.data), spent
