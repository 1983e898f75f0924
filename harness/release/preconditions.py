"""Can two sides be paired at all? Same tasks, graders, images, budgets and environments.

Eval-harness guide: pairing needs identical inputs, pinned corpus, the same grader version and
interleaved runs; "a judge whose version changes between your two arms breaks pairing
outright". Each check returns plain sentences naming what differs, so a refusal can be read.
"""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np

from harness.analysis.table import Trials
from harness.release.run_config import StoredConfig


def _short(value: object, n: int = 12) -> str:
    s = "none" if value is None else str(value)
    if s.startswith("sha256:"):
        s = s[7:]
    return s[:n]


def _names(items: list[str], limit: int = 5) -> str:
    head = ", ".join(items[:limit])
    return head + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _tasks(trials: Trials) -> set[str]:
    return set(trials.task_ids.tolist())


def _of_tasks(trials: Trials, tasks: set[str]) -> Trials:
    return trials.where(np.isin(trials.task.values(), sorted(tasks)))


def _grader_versions(trials: Trials, tasks: set[str]) -> dict[str, set[str]]:
    return _of_tasks(trials, tasks).grader_versions()


def _images(trials: Trials, tasks: set[str]) -> dict[str, set[str]]:
    """Task -> the environment images its trials started from: the task image under a
    ready-made agent's CLI layer, so a CLI arm pairs with any other arm on the same image."""
    t = _of_tasks(trials, tasks)
    width = len(t.pair_image.names)
    pairs = np.unique(t.task.codes * width + t.pair_image.codes)
    out: dict[str, set[str]] = defaultdict(set)
    for task, image in zip(
        t.task.names[pairs // width].tolist(),
        t.pair_image.names[pairs % width].tolist(),
        strict=True,
    ):
        if image:
            out[task].add(image)
    return out


def _canon(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


# long: it is a flat list of independent precondition checks, a few lines each, in the order they
#   are reported.
def differences(
    config_a: StoredConfig,
    trials_a: Trials,
    config_b: StoredConfig,
    trials_b: Trials,
    labels: tuple[str, str] = ("A", "B"),
    *,
    judges_apart: bool = False,
) -> list[dict[str, str]]:
    """Every reason the two sides cannot be paired, as ``[{"check", "message"}]``.

    ``config_*`` is a run's stored resolved config (keys suite, tasks, environments);
    ``trials_*`` the side's trials. Checks: task ids; grader versions (from the trials);
    image ids (the trials); budgets (suite and per-task overrides); environment
    versions and image recipes; task definitions (instruction, graders, setup...).
    ``judges_apart``: leave judge graders out of the task definitions (their setups are
    checked on their own: ``harness.release.judge_setups``).
    """
    from harness.release.judge_setups import without_judges

    la, lb = labels
    out: list[dict[str, str]] = []
    ta, tb = _tasks(trials_a), _tasks(trials_b)
    if ta != tb:
        only_a, only_b = sorted(ta - tb), sorted(tb - ta)
        parts = []
        if only_a:
            parts.append(f"{len(only_a)} only in {la} ({_names(only_a)})")
        if only_b:
            parts.append(f"{len(only_b)} only in {lb} ({_names(only_b)})")
        out.append({"check": "tasks", "message": "task sets differ: " + "; ".join(parts)})
    shared = ta & tb

    ga, gb = _grader_versions(trials_a, shared), _grader_versions(trials_b, shared)
    for grader in sorted(set(ga) | set(gb)):
        va, vb = sorted(ga.get(grader, set())), sorted(gb.get(grader, set()))
        if va != vb:
            out.append(
                {
                    "check": "graders",
                    "message": f"grader '{grader}' version {'/'.join(va) or 'absent'} in {la} "
                    f"vs {'/'.join(vb) or 'absent'} in {lb}",
                }
            )

    ia, ib = _images(trials_a, shared), _images(trials_b, shared)
    diff_tasks = sorted(t for t in set(ia) | set(ib) if ia.get(t) != ib.get(t))
    if diff_tasks:
        pairs = sorted(
            {
                f"{'/'.join(_short(x) for x in sorted(ia.get(t, {None}), key=str))} vs "
                f"{'/'.join(_short(x) for x in sorted(ib.get(t, {None}), key=str))}"
                for t in diff_tasks
            }
        )
        out.append(
            {
                "check": "images",
                "message": f"image ids differ on {len(diff_tasks)} task(s) "
                f"({_names(diff_tasks, 3)}): {_names(pairs, 3)}",
            }
        )

    sa, sb = config_a.get("suite") or {}, config_b.get("suite") or {}
    ba, bb = sa.get("budgets") or {}, sb.get("budgets") or {}
    for key in sorted(set(ba) | set(bb)):
        if ba.get(key) != bb.get(key):
            out.append(
                {
                    "check": "budgets",
                    "message": f"budget {key}: {ba.get(key)} in {la} vs {bb.get(key)} in {lb}",
                }
            )
    tasks_a, tasks_b = config_a.get("tasks") or {}, config_b.get("tasks") or {}
    budget_tasks, defn_tasks = [], []
    for t in sorted(shared):
        da, db = tasks_a.get(t), tasks_b.get(t)
        if da is None or db is None:
            continue
        if _canon(da.get("budgets")) != _canon(db.get("budgets")):
            budget_tasks.append(t)
        strip = ("budgets", "must_never")
        ka = {k: v for k, v in da.items() if k not in strip}
        kb = {k: v for k, v in db.items() if k not in strip}
        if judges_apart:
            ka, kb = without_judges(ka), without_judges(kb)
        if _canon(ka) != _canon(kb):
            defn_tasks.append(t)
    if budget_tasks:
        out.append(
            {
                "check": "budgets",
                "message": f"per-task budget overrides differ on {len(budget_tasks)} task(s) "
                f"({_names(budget_tasks)})",
            }
        )
    if defn_tasks:
        out.append(
            {
                "check": "task definitions",
                "message": f"task definitions (instruction, graders, setup, ...) differ on "
                f"{len(defn_tasks)} task(s) ({_names(defn_tasks)})",
            }
        )

    used = {(tasks_a.get(t) or {}).get("environment") for t in shared} | {
        (tasks_b.get(t) or {}).get("environment") for t in shared
    }
    ea, eb = config_a.get("environments") or {}, config_b.get("environments") or {}
    for env in sorted(e for e in used if e):
        xa, xb = ea.get(env) or {}, eb.get(env) or {}
        if xa.get("version") != xb.get("version"):
            out.append(
                {
                    "check": "environments",
                    "message": f"environment '{env}' version {xa.get('version')} in {la} vs "
                    f"{xb.get('version')} in {lb}",
                }
            )
        elif _canon(xa.get("image")) != _canon(xb.get("image")):
            out.append(
                {
                    "check": "environments",
                    "message": f"environment '{env}' image recipe differs "
                    f"({_canon(xa.get('image'))} vs {_canon(xb.get('image'))})",
                }
            )
    return out
