"""Every view says the same number: real suites run through ``harness run``, then
``report --json``, the terminal summary, Markdown, HTML, ``compare --json``, ``gate --json``
and ``history --json`` must agree on every quantity they share (estimate, interval, n, unit,
arm roles) to the last digit, or, on the printed pages (the report's, and ``compare`` and
``gate --markdown``), to the digit they print; history's move of each arm since an earlier
run is what ``compare EARLIER:ARM RUN:ARM`` says.

The suites cover each way roles are declared: ``gate.primary`` only, ``report.primary`` only
(no gate section: ``harness gate --policy`` then takes the report's pair; with
``cluster_key: task``), and an A/A arm of each naming style (``aa: true``'s ``-aa``, ``_aa``,
``.aa``, a twin configured like the baseline, at the suite's own confidence). All runs share
one store built once for the module (one ``harness run`` per suite, simulated agents on
unsafe-local, 18 of the demo tasks: 3 per cluster, 6 per class), so the views also pick the
right run among several. Each view is one real CLI call per suite (in this process)."""

from __future__ import annotations

import fcntl
import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from harness.report.render.numbers import (
    ci,
    delta_text,
    num,
    pct,
    points,
    rate_text,
    signed_points,
)
from tests.analysis.html_text import Page, read_page
from tests.cli.test_usage_errors import _main
from tests.conftest import REPO

PER_CLUSTER = 3
"""Demo tasks kept per cluster: 18 tasks, 6 per class in 2 clusters (so a class delta has an
interval only in the suite whose unit is the task)."""


def _arm(name: str, a: float, b: float = 2.0) -> dict:
    return {"name": name, "agent": "simulated", "params": {"a": a, "b": b}}


GATE = {"rule": "improvement", "sides": "two-sided", "confidence": 0.95, "max_unresolved": 1.0}
SUITES = {
    "gate-primary-only": (
        {
            "arms": [_arm("first", 2.0), _arm("cand", 4.0), _arm("base", 3.0)],
            "gate": {**GATE, "primary": {"baseline": "base", "candidate": "cand"}},
        },
        ("base", "cand", None),
    ),
    "report-primary-only": (
        {
            "arms": [_arm("cand", 4.0), _arm("base", 3.0)],
            "aa": True,
            "report": {"primary": {"baseline": "base", "candidate": "cand"}, "cluster_key": "task"},
        },
        ("base", "cand", "base-aa"),
    ),
    "aa-underscore": (
        {"arms": [_arm("base", 3.0), _arm("cand", 4.0), _arm("base_aa", 3.0)], "gate": GATE},
        ("base", "cand", "base_aa"),
    ),
    "aa-dot": (
        {"arms": [_arm("base", 3.0), _arm("base.aa", 3.0), _arm("cand", 2.5)], "gate": GATE},
        ("base", "cand", "base.aa"),
    ),
    "aa-twin": (
        {
            "arms": [_arm("base", 3.0), _arm("cand", 4.0), _arm("twin", 3.0)],
            "report": {"primary": {"baseline": "base", "candidate": "cand"}, "confidence": 0.9},
            "gate": {**GATE, "confidence": 0.9},
        },
        ("base", "cand", "twin"),
    ),
}
SHARED = ("estimate", "lo", "hi", "n", "unit")
TRIALS = {"gate-primary-only": 2, "report-primary-only": 2}
"""Two trials per task (the sign test, per-trial pairing) for these; one for the others
(the exact McNemar test): both designs are compared, and the runs stay short."""
EARLIER = {"report-primary-only": 8}
"""Suites run once before, at this seed: history's move of each arm since that run must be
what ``compare EARLIER:ARM RUN:ARM`` says (with the suite's ``cluster_key: task``, which
history once left out)."""
PLANNED = {"gate-primary-only": ("first", "cand"), "report-primary-only": None}
"""Suites whose run ``plan --run`` also reads (it simulates the gate 2,000 times: about a
second each): under a ``--policy`` declaring this other pair, which ``gate --policy`` must
then judge too, or (None) under the suite's own pair."""
ROLE_TEXT = {"baseline": "baseline", "candidate": "candidate", "aa": "A/A copy of baseline"}
"""How the HTML page's arm table names each role."""


@dataclass
class Views:
    """One run as every view shows it."""

    report: dict
    terminal: str
    markdown: str
    html: Page
    compare: dict
    gate: dict
    history: dict
    compare_md: str
    gate_md: str
    plan: dict | None
    planned: tuple[str, str] | None
    """The pair ``plan`` (and ``gate`` under the same ``--policy``) must read."""
    policy_gate: dict | None
    earlier: str | None
    moves: dict[str, dict]
    """compare's paired move of each arm from the earlier run (none without one)."""


def _cli(*argv: str) -> str:
    code, out, err = _main(*argv)
    assert code in (0, 10, 11, 12, 13), err
    return out


def _json(*argv: str) -> dict:
    return json.loads(_cli(*argv))


def _same(a: dict, b: dict, keys=SHARED, what: str = "") -> None:
    assert {k: a.get(k) for k in keys} == {k: b.get(k) for k in keys}, what


def _task_file(path: Path) -> str:
    """The demo tasks, ``PER_CLUSTER`` of each cluster."""
    demo = yaml.safe_load((REPO / "tasks" / "demo" / "tasks.yaml").read_text())
    kept: dict[str, int] = {}
    tasks = []
    for t in demo["tasks"]:
        kept[t["cluster"]] = kept.get(t["cluster"], 0) + 1
        if kept[t["cluster"]] <= PER_CLUSTER:
            tasks.append(t)
    path.write_text(yaml.safe_dump({"defaults": demo["defaults"], "tasks": tasks}))
    return str(path)


def _run(tmp: Path, store: str, name: str, tasks: str, seed: int = 7) -> str:
    spec, _ = SUITES[name]
    suite = {
        "name": name,
        "seed": seed,
        "trials": TRIALS.get(name, 1),
        "tasks": [tasks],
        "environments_dir": str(REPO / "environments"),
        "sandbox": "unsafe-local",
        "concurrency": 8,
        **spec,
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(suite))
    code, _, err = _main("run", str(path), "--store", store, "-q")
    assert code == 0, err
    found = re.search(r"run id: (\S+)", err)
    assert found, err
    return found[1]


def _views(tmp: Path, store: str, name: str, run: str, earlier: str | None) -> Views:
    """Each view of ``run``: one CLI call each (``report --html`` prints the terminal view)."""
    at = ("--store", store)
    report = _json("report", run, *at, "--json")
    policy = ()
    if "gate" not in SUITES[name][0]:  # no gate section: a policy from a file, without a pair
        (tmp / "policy.yaml").write_text(yaml.safe_dump(GATE))
        policy = ("--policy", str(tmp / "policy.yaml"))
    planned = (PLANNED[name] or SUITES[name][1][:2]) if name in PLANNED else None
    plan_policy = policy
    if PLANNED.get(name):  # a policy naming another pair than the suite's
        b, c = PLANNED[name]
        (tmp / "pair.yaml").write_text(
            yaml.safe_dump({**GATE, "primary": {"baseline": b, "candidate": c}})
        )
        plan_policy = ("--policy", str(tmp / "pair.yaml"))
    page = tmp / f"{name}.html"
    terminal = _cli("report", run, *at, "--html", str(page), "--section", "comparison")
    return Views(
        report=report,
        terminal=" ".join(terminal.split()),  # rich wraps long lines at spaces
        markdown=_cli("report", run, *at, "--markdown"),
        html=read_page(page.read_text()),
        compare=_json("compare", run, *at, "--json"),
        gate=_json("gate", run, *at, "--json", *policy),
        compare_md=_cli("compare", run, *at, "--markdown"),
        gate_md=_cli("gate", run, *at, "--markdown", *policy),
        plan=_json("plan", "--run", run, *at, "--json", *plan_policy) if planned else None,
        planned=planned,
        policy_gate=_json("gate", run, *at, "--json", *plan_policy) if PLANNED.get(name) else None,
        history=_json("history", name, *at, "--json")["runs"][-1],
        earlier=earlier,
        moves={
            arm: _json("compare", f"{earlier}:{arm}", f"{run}:{arm}", *at, "--json")
            for arm in (report["arms"] if earlier else ())
        },
    )


def _runs(tmp: Path) -> tuple[str, dict[str, dict[str, str]]]:
    """The store in ``tmp`` holding a run of every suite (after the ``EARLIER`` ones): (store
    URL, {"runs": suite -> run id, "earlier": suite -> run id}).
    Built once: under pytest-xdist the workers of a session share ``tmp``, the first one
    builds the store and the others wait on the lock and read what it wrote."""
    store = f"sqlite:///{tmp / 'views.db'}"
    done = tmp / "runs.json"
    with open(tmp / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return store, json.loads(done.read_text())
        tasks = _task_file(tmp / "tasks.yaml")
        earlier = {name: _run(tmp, store, name, tasks, seed) for name, seed in EARLIER.items()}
        ids = {"runs": {name: _run(tmp, store, name, tasks) for name in SUITES}, "earlier": earlier}
        assert len(set(ids["runs"].values())) == len(SUITES)
        done.write_text(json.dumps(ids))
    return store, ids


@pytest.fixture(scope="module")
def views(request, tmp_path_factory) -> Callable[[str], Views]:
    """Each suite's views, taken when a test asks for them (so a worker given one suite's
    tests pays for that suite's views only), over one store (``_runs``)."""
    if hasattr(request.config, "workerinput"):  # a pytest-xdist worker: one folder for all
        shared = tmp_path_factory.getbasetemp().parent / "views-store"
        shared.mkdir(exist_ok=True)
    else:
        shared = tmp_path_factory.mktemp("views-store")
    store, ids = _runs(shared)
    tmp = tmp_path_factory.mktemp("views")

    @functools.cache
    def of(name: str) -> Views:
        run = ids["runs"][name]
        v = _views(tmp, store, name, run, ids["earlier"].get(name))
        assert v.report["run"]["id"] == v.gate["run_id"] == v.history["run_id"] == run
        return v

    return of


@pytest.mark.parametrize("name", list(SUITES))
def test_every_view_says_the_same_number(views, name):
    """One test per suite (under ``-n``, one worker takes each suite's views once)."""
    _, (base, cand, aa) = SUITES[name]
    v = views(name)
    _json_views_agree(v, base, cand, aa)
    _pages_print_the_numbers_of_the_json_views(v, base, cand, aa, gated="gate" in SUITES[name][0])
    for page in (v.compare_md, v.gate_md):
        _release_markdown_prints_the_report(page, v.report, base, cand, aa)


def _json_views_agree(v: Views, base: str, cand: str, aa: str | None) -> None:
    report, compare, gate, history = v.report, v.compare, v.gate, v.history
    run = report["run"]["id"]

    # arm roles
    assert report["roles"] == {"baseline": base, "candidate": cand, "aa": aa}
    assert compare["baseline_side"].endswith(f":{base}")
    assert compare["candidate_side"].endswith(f":{cand}")
    assert (gate["baseline"], gate["candidate"]) == (base, cand)

    # the primary comparison: report, its forest plot's overall row, compare, gate
    comparison = report["comparison"]
    assert comparison is not None
    _same(comparison, compare, what="report vs compare")
    _same(comparison, gate["primary"], what="report vs gate")
    _same(comparison, report["class_deltas"]["overall"], what="report vs its class deltas")
    assert comparison["n_clusters"] == compare["n_clusters"] == gate["primary"]["n_clusters"]

    # per-class deltas: the report's forest plot, compare's and the gate's screens
    by_class = {c["class"]: c for c in report["class_deltas"]["by_class"]}
    for screens in (compare["screens"], gate["screens"]):
        assert set(by_class) == {c["class"] for c in screens["classes"]}
        for c in screens["classes"]:
            _same(by_class[c["class"]], c, what=f"class {c['class']}")

    # the A/A noise floor in every view, or in none
    floors = [
        report["class_deltas"]["noise_floor"],
        compare["noise_floor"],
        gate["noise_floor"],
        history["noise_floor"],
    ]
    if aa is None:
        assert floors == [None] * 4
    else:
        for f in floors[1:]:
            _same(floors[0], f, (*SHARED, "arm", "degenerate"), what="noise floor")

    # each arm's rate (one estimate record everywhere): the report, compare's sides, history
    arms = report["arms"]
    for side, arm in (("baseline", base), ("candidate", cand)):
        _same(compare[side], arms[arm]["success"], what=f"compare {side} vs report")
    assert {h["arm"] for h in history["arms"]} == set(arms)
    for h in history["arms"]:
        _same(h, arms[h["arm"]]["success"], (*SHARED, "confidence"), what=f"history {h['arm']}")

    # the plan for the next run reads the pair the gate judges, its baseline rate and units
    if v.plan is not None and v.planned is not None:
        plan, (pb, pc) = v.plan, v.planned
        assert (plan["run_id"], plan["baseline"], plan["candidate"]) == (run, pb, pc)
        if v.policy_gate is not None:
            assert (v.policy_gate["baseline"], v.policy_gate["candidate"]) == (pb, pc)
        b = arms[pb]["success"]
        assert (plan["baseline_rate"], plan["baseline_interval"]) == (
            b["estimate"],
            [b["lo"], b["hi"]],
        )
        assert plan["baseline_method"] == b["method"]
        assert (plan["n_tasks"], plan["n_clusters"]) == (
            comparison["n_tasks"],
            comparison["n_clusters"],
        )

    # each arm's move since the earlier run: history and compare EARLIER:ARM RUN:ARM
    for h in history["arms"]:
        if v.earlier is None:
            assert h["move"] is None, h["arm"]
            continue
        assert h["move"]["from_run"] == v.earlier and h["move"]["paired"], h["arm"]
        _same(h["move"], v.moves[h["arm"]], what=f"history's move of {h['arm']} vs compare")


def _rate_cell(r: dict) -> str:
    """A rate as the HTML page prints it: estimate [lo, hi]."""
    return f"{pct(r['estimate'])} {ci(r)}".strip()


def _delta_cell(r: dict, forest: bool = False) -> str:
    """A difference as the HTML page prints it: estimate [lo, hi] in points (the forest
    plot's table says why an interval is missing)."""
    if r.get("lo") is not None:
        return delta_text(r)
    return signed_points(r["estimate"]) + (" (no interval: too few clusters)" if forest else "")


def _pages_print_the_numbers_of_the_json_views(
    v: Views, base: str, cand: str, aa: str | None, *, gated: bool
) -> None:
    """Terminal, Markdown and HTML print what compare, gate and history compute, under the
    same arm roles. The expected texts come from the JSON of the other commands."""
    compare, gate, history = v.compare, v.gate, v.history
    rates = {h["arm"]: h for h in history["arms"]}
    floor = gate["noise_floor"]

    # terminal and Markdown: each arm's rate, the primary delta, the floor (or none)
    primary = f"{cand} − {base}: {delta_text(compare)}"
    assert primary in v.terminal
    assert f"**{primary}**" in v.markdown
    for arm, rate in rates.items():
        assert rate_text(rate) in v.terminal, arm
        assert f"| {arm} |" in v.markdown and rate_text(rate) in v.markdown, arm
    floor_line = f"noise floor (A/A, {aa} − {base}): "
    for page in (v.terminal, v.markdown):
        if floor is None:
            assert "noise floor (A/A" not in page
        else:
            assert floor_line + delta_text(floor) in page

    # HTML: arm roles, each arm's rate with n, the primary and per-class deltas, the floor
    html = v.html
    roles = {role: arm for role, arm in (("baseline", base), ("candidate", cand), ("aa", aa))}
    expected_roles = {arm: "" for arm in rates} | {a: ROLE_TEXT[r] for r, a in roles.items() if a}
    assert {a: row["role"] for a, row in html.table("page", "arm").items()} == expected_roles
    headline = html.table("headline", "arm")
    assert set(headline) == set(rates)
    for arm, rate in rates.items():
        row = headline[arm]
        assert row["success [interval]"] == _rate_cell(rate), arm
        assert row["n"] == f"{num(rate['n'])} {rate['unit']}s", arm
    assert f"Primary comparison {cand} − {base}: {_delta_cell(compare)}" in html.text["headline"]
    forest = html.table("forest", "class")
    assert set(forest) == {"overall"} | {c["class"] for c in gate["screens"]["classes"]} | (
        set() if floor is None else {"A/A noise floor"}
    )
    for label, r in [("overall", compare), *((c["class"], c) for c in gate["screens"]["classes"])]:
        assert forest[label]["delta [interval]"] == _delta_cell(r, forest=True), label
        assert forest[label]["tasks"] == num(r["n"]), label
    if floor is not None:
        assert forest["A/A noise floor"]["delta [interval]"] == _delta_cell(floor)
        assert forest["A/A noise floor"]["tasks"] == num(floor["n"])
        assert f"A/A noise floor: {aa} − {base}" in html.text["forest"]
    if gated:  # the page shows the verdict of the suite's own gate
        assert f"{cand} − {base}: {_delta_cell(gate['primary'])}" in html.text["gate"]
    else:
        assert "gate" not in html.text


def _screens_table(markdown: str) -> dict[str, dict[str, str]]:
    """The screens table of compare's or gate's Markdown, by class."""
    lines = markdown.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("| class | tasks |"))
    cols = [c.strip() for c in lines[head].strip("|").split("|")]
    rows = {}
    for line in lines[head + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(cols, cells, strict=True))
    return rows


def _release_markdown_prints_the_report(
    page: str, report: dict, base: str, cand: str, aa: str | None
) -> None:
    """compare --markdown and gate --markdown print the report's numbers: each side's rate,
    the primary delta, each class's delta and n, the A/A floor (or that there is none)."""
    arms, c = report["arms"], report["comparison"]
    assert f"- baseline  {rate_text(arms[base]['success'])}" in page
    assert f"- candidate {rate_text(arms[cand]['success'])}" in page
    assert (
        f"- delta (candidate − baseline) {signed_points(c['estimate'])}, "
        f"{c['confidence']:.0%} interval [{signed_points(c['lo'])}, {signed_points(c['hi'])}] "
        f"(n={c['n']} {c['unit']}s, {c['n_clusters']} clusters)"
    ) in page
    rows = _screens_table(page)
    deltas = report["class_deltas"]
    assert set(rows) == {d["class"] for d in deltas["by_class"]}
    for d in deltas["by_class"]:
        row = rows[d["class"]]
        shown = (
            f"[{points(d['lo'])}, {points(d['hi'])}]" if d["lo"] is not None else "(no interval)"
        )
        assert row["delta (pts)"].removesuffix(" ⚠") == f"{points(d['estimate'])} {shown}"
        assert row["delta (pts)"].endswith(" ⚠") == bool(d.get("warning")), d["class"]
        assert row["tasks"] == f"{d['n']} ({d['n_clusters']} cl.)", d["class"]
        assert row["tasks ±"] == f"+{d['improved']} / −{d['worse']}", d["class"]
    floor = deltas["noise_floor"]
    if floor is None:
        assert "- noise floor: no A/A arm in this run" in page
    else:  # the report's own floor line (report/render/fmt.floor_text)
        assert (
            f"- noise floor (A/A, {aa} − {base}): {delta_text(floor)} "
            f"(n = {floor['n']} {floor['unit']}s; {floor['method']})"
        ) in page
