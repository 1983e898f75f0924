"""docs/reference.md is generated from the models that read the files: it must equal what
the models say now, and every field of every documented model must say what it means."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from harness import reference
from harness.config.models import Limits

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference.md"


def test_the_checked_in_page_is_what_the_models_say():
    assert PAGE.read_text() == reference.render(), (
        "docs/reference.md is stale: python -m harness.reference > docs/reference.md"
    )


def test_every_field_is_documented():
    assert reference.undocumented() == []


def test_a_field_added_without_its_doc_fails(monkeypatch):
    """What happens when someone adds a suite key and forgets to say what it means."""
    fields = dict(Limits.model_fields)
    fields["swap"] = Field("0")  # type: ignore[assignment]
    fields["swap"].annotation = str
    monkeypatch.setattr(Limits, "model_fields", fields)
    assert reference.undocumented() == ["Limits.swap"]
    assert "| `swap` |" in reference.render()


def test_the_semantics_users_asked_for_are_on_the_page():
    page = PAGE.read_text()
    for needle in (
        "full match of a Python regular expression",  # answer_match regex
        "$HIDDEN_DIR",  # the hidden-test protocol
        "null` deletes",  # state_diff patches
        "exit 127",  # tool calls: an unknown tool
        "${VAR:-default}",  # interpolation
        "HARNESS_ANSWER_FILE",  # the command agent's protocol
    ):
        assert needle in page, needle
    for section in ("## Suite file", "## Task file", "## Environment file", "## Graders"):
        assert section in page
