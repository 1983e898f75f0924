"""Every task's reference solution passes its graders when run for real in a LocalSandbox,
and every applicable mutant of the simulated agent fails them (zero false passes)."""

from __future__ import annotations

import anyio
import pytest
from graders_support import LoadedTask, all_tasks, run_trial

from harness.agents.base import AgentContext, AgentResult
from harness.agents.mutants import MUTANTS, applicable_mutants
from harness.agents.oracle import perform_solution

FOLDERS = ("retail", "shell", "qa")


def _one_per_class(tasks: list[LoadedTask]) -> list[LoadedTask]:
    """The first task of each class: every grader and mutant kind the folder has. Every retail
    task (46, 5-7 s each in CI) is also run with every mutant through the CLI by
    ``harness validate`` (tests/graders/test_validate_shipped.py), so here a sample suffices."""
    seen: dict[str | None, LoadedTask] = {}
    for t in tasks:
        seen.setdefault(t.task.class_, t)
    return list(seen.values())


TASKS = [
    t
    for folder in FOLDERS
    for t in (_one_per_class(all_tasks(folder)) if folder == "retail" else all_tasks(folder))
]


async def reference(ctx: AgentContext) -> AgentResult:
    assert ctx.task.solution is not None
    return AgentResult(answer=await perform_solution(ctx))


def _needs_lead_grader(loaded: LoadedTask) -> bool:
    try:
        import graders.answer_match  # noqa: F401
    except ImportError:
        return any(g.type == "answer_match" for g in loaded.task.graders)
    return False


@pytest.mark.parametrize("loaded", TASKS, ids=[t.task.id for t in TASKS])
def test_reference_passes_and_mutants_fail(loaded: LoadedTask) -> None:
    if _needs_lead_grader(loaded):
        pytest.skip("graders.answer_match (the lead's) is not there yet")
    names = applicable_mutants(loaded.task)
    results: dict[str, object] = {}

    async def go() -> None:
        async def one(name: str, agent) -> None:
            results[name] = await run_trial(loaded, agent)

        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "reference", reference)
            for name in names:
                tg.start_soon(one, name, MUTANTS[name])

    anyio.run(go)
    ref = results["reference"]
    assert ref.passed, f"reference solution fails: {ref.why()}"
    false_passes = [n for n in names if results[n].passed]
    assert not false_passes, f"mutants passed the graders: {false_passes}"


def test_task_counts() -> None:
    by_folder = {f: [t.task for t in all_tasks(f)] for f in FOLDERS}
    retail = by_folder["retail"]
    assert len(retail) >= 40
    assert len({t.class_ for t in retail}) >= 6
    no_change = [
        t
        for t in retail
        if any(g.type == "state_diff" and g.model_dump().get("expect_no_change") for g in t.graders)
        and t.class_ in ("policy_refusal", "transfer")
    ]
    assert len(no_change) >= 6
    ordered = [
        t
        for t in retail
        if any(g.type == "trajectory" and g.model_dump().get("order") for g in t.graders)
    ]
    assert len(ordered) >= 5
    assert len(by_folder["shell"]) >= 15
    assert any(g.type == "tests_script" for t in by_folder["shell"] for g in t.graders)
    assert len(by_folder["qa"]) >= 20
    ids = [t.id for ts in by_folder.values() for t in ts]
    assert len(ids) == len(set(ids)), "task ids must be unique"
    for ts in by_folder.values():
        assert all(t.cluster for t in ts), "every task declares its cluster"


def test_every_mutant_is_exercised_somewhere() -> None:
    used = {n for t in TASKS for n in applicable_mutants(t.task)}
    assert used == set(MUTANTS)
