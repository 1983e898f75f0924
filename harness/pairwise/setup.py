"""The pairwise judge file: which model compares, in which API, asked what.

``harness pairwise RUN --judge FILE`` reads it. Its ``model:`` block is the rubric judge's
(name, base_url, api_key_env, price, retries); ``question`` and ``rubric`` are what the judge
is asked. Everything that decides a verdict (model, endpoint, API, settings, prompt, question,
rubric, what it reads) is hashed into the setup: stored judgements are reused only by the
same setup, and judgements of different setups never mix in one summary.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from graders.judge_call import JudgeAPI, model_setup
from harness.config.base import FieldError, Strict
from harness.config.models import ModelSettings
from harness.config.yamlio import FieldPath

if TYPE_CHECKING:
    from harness.config.pairwise import SuitePairwise
    from harness.store.tables import Run

Lines = dict[FieldPath, int]
"""Field path -> line in the file (``read_yaml``)."""

DEFAULT_QUESTION = "Which response better accomplishes the task?"
Reading = Literal["conversation", "answer"]
DEFAULT_READS: tuple[Reading, ...] = ("conversation", "answer")


class PairwiseJudgeSetup(Strict):
    """A pairwise judge (a judge file, or a suite's ``pairwise.judge`` inline): its own model
    endpoint and what it is asked."""

    model: ModelSettings
    """the judge's own endpoint: name, base_url, api_key_env, price (api: anthropic for
    Messages)"""
    api: JudgeAPI = "chat"
    """which API the judge speaks: chat (completions), responses, or messages (Anthropic)"""
    question: str = Field(DEFAULT_QUESTION, min_length=1)
    """what the judge decides between the two responses"""
    rubric: str = ""
    """optional text of what counts (criteria, priorities), shown under the question"""
    reads: list[Reading] = Field(default_factory=lambda: list(DEFAULT_READS), min_length=1)
    """what the judge is shown of each response: the conversation, the final answer"""

    @model_validator(mode="after")
    def _api(self) -> PairwiseJudgeSetup:
        wants = "anthropic" if self.api == "messages" else "openai"
        if self.model.api != wants:
            raise FieldError(("model", "api"), f"api '{self.api}' needs model.api: {wants}")
        return self

    def setup(self) -> dict[str, Any]:
        """What decides the verdicts (the API key variable and price do not)."""
        from harness.pairwise.prompt import SYSTEM, TEMPLATE

        return {
            "kind": "pairwise",
            **model_setup(self.model, self.api),
            "prompt": TEMPLATE,
            "system": SYSTEM,
            "question": self.question,
            "rubric": self.rubric,
            "reads": self.reads,
        }

    def setup_hash(self) -> str:
        text = json.dumps(self.setup(), sort_keys=True, default=str)
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def load_setup(path: Path) -> PairwiseJudgeSetup:
    """The judge file at ``path``, its ``${VAR}`` references resolved; a bad one is a
    one-line ``ConfigError`` naming the file, the field and its line."""
    from harness.config.yamlio import read_yaml

    data, lines = read_yaml(path)
    return _checked(data, path, lines, ())


def suite_judge(block: SuitePairwise, suite_path: Path, lines: Lines) -> PairwiseJudgeSetup:
    """The judge a suite's ``pairwise:`` block declares: its file (relative to the suite;
    errors name that file) or its keys inline (errors name the suite file and the field,
    e.g. ``pairwise.judge.model.name``)."""
    from harness.errors import ConfigError

    if isinstance(block.judge, str):
        path = suite_path.parent / block.judge
        if not path.is_file():
            where = ("pairwise", "judge")
            raise ConfigError(
                str(suite_path),
                "pairwise.judge",
                f"no judge file {path}",
                lines.get(where),
            )
        return load_setup(path)
    return _checked(block.judge, suite_path, lines, ("pairwise", "judge"))


def _checked(data: Any, path: Path, lines: Lines, prefix: FieldPath) -> PairwiseJudgeSetup:
    """``data`` validated as a judge (errors at ``prefix`` in ``path``), its model's
    ``${VAR}`` references resolved."""
    from harness.config.env import expand_env
    from harness.config.loader import field_path, nearest_line, validate
    from harness.errors import ConfigError

    setup: PairwiseJudgeSetup = validate(PairwiseJudgeSetup, data, path, lines, prefix)
    try:  # now, so the setup hash and the stored rows name the judge that answered
        model = expand_env(setup.model)
    except ConfigError as exc:
        loc = (*prefix, "model", exc.field)
        raise ConfigError(
            str(path), field_path(loc), exc.message, nearest_line(lines, loc)
        ) from None
    return setup.model_copy(update={"model": model})


def declared_judge(run: Run) -> tuple[PairwiseJudgeSetup, list[str] | None] | None:
    """The pairwise judge (and arms) the run's suite declared (``pairwise:``, read from the
    stored config; a judge file relative to the suite file as it was), or None."""
    from harness.config.pairwise import SuitePairwise

    suite = (run.config or {}).get("suite")
    block = suite.get("pairwise") if isinstance(suite, dict) else None
    if not block:
        return None
    declared = SuitePairwise.model_validate(block)
    return suite_judge(declared, Path(run.suite_path), {}), declared.arms
