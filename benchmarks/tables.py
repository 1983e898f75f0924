"""The docs' error-rate, power and coverage tables, written from the checked-in simulation results.

Each simulation writes its rows to ``benchmarks/results/*.json`` (the command that made it is
in the file); this script renders them into docs/statistics.md between
``<!-- begin: NAME -->`` and ``<!-- end: NAME -->`` markers, so the tables the docs show are
the measured ones. ``--check`` exits 1 when the docs differ from what the results give (CI).

Run: python -m benchmarks.tables [--check]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DOC = ROOT / "docs" / "statistics.md"


def _pct(x: float | None, digits: int = 1) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}%}"


def _cell_name(r: dict) -> str:
    return f"{r['value']:g}, {r['clusters']} {r['sizes']}, {r['spread']}, T={r['trials']}"


KIND_TEXT = {
    "threshold": ("threshold gate (truth at the bar)", "passes ('meets the bar')", "fails"),
    "non-inferiority": (
        "non-inferiority gate (truth at −margin 5 pts)",
        "passes ('non-inferior')",
        "calls a regression",
    ),
    "improvement": ("improvement gate (truth 0)", "passes ('improvement')", "calls a regression"),
}


def coverage_tables(data: dict) -> str:
    rows = data["rows"]
    reps = data["settings"]["reps"]
    se = math.sqrt(0.05 * 0.95 / reps)
    by_kind: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_kind[r["kind"]].append(r)
    out = [
        f"`{data['settings']['command']} --reps {reps}`: {reps:,} planted runs per cell "
        f"(± {se:.2%} at 5%, ± {math.sqrt(0.95 * 0.05 / reps):.2%} on a 95% coverage). "
        "Cells: bars or baseline rates 0.5–0.95, 12 / 24 / 60 clusters of equal (8) or "
        "unequal (2–18) size, mild (σ_c 0.4) or strong (σ_c 1.2) cluster spread on the logit "
        "scale, 1 or 3 trials per task; paired cells add per-cluster effect heterogeneity.",
        "",
        "| decision | cells | worst false decision (cell) | its other error, worst | "
        "two-sided 95% coverage, range | before: worst false pass |",
        "|---|---|---|---|---|---|",
    ]
    for kind, (what, passes, fails) in KIND_TEXT.items():
        rs = by_kind.get(kind, [])
        if not rs:
            continue
        worst = max(rs, key=lambda r: r["false pass"])
        other = max(rs, key=lambda r: r["false fail"])
        cov = [r["coverage"] for r in rs]
        before = max(rs, key=lambda r: r["false pass before"])
        out.append(
            f"| {what} | {len(rs)} | {passes} {_pct(worst['false pass'])} "
            f"({_cell_name(worst)}) | {fails} {_pct(other['false fail'])} ({_cell_name(other)}) "
            f"| {_pct(min(cov))}–{_pct(max(cov))} | {_pct(before['false pass before'])} |"
        )
    for kind in sorted(k for k in by_kind if k.startswith("pass^")):
        rs = by_kind[kind]
        cov = [r["coverage"] for r in rs]
        miss = max(rs, key=lambda r: r["miss above"])
        out.append(
            f"| {kind} interval (4 trials per task) | {len(rs)} | — | truth above the interval "
            f"{_pct(miss['miss above'])} ({_cell_name(miss)}) | {_pct(min(cov))}–{_pct(max(cov))} "
            "| — |"
        )
    out += ["", "<details><summary>every cell</summary>", ""]
    out += [
        "| decision | value | clusters | sizes | spread | trials | false pass | false fail / "
        "miss above | coverage | before |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        other = r.get("false fail", r.get("miss above"))
        out.append(
            f"| {r['kind']} | {r['value']:g} | {r['clusters']} | {r['sizes']} | {r['spread']} | "
            f"{r['trials']} | {_pct(r.get('false pass'))} | {_pct(other)} | "
            f"{_pct(r['coverage'])} | {_pct(r.get('false pass before'))} |"
        )
    out += ["", "</details>"]
    return "\n".join(out)


def plan_tables(data: dict) -> str:
    from benchmarks.plan_power import markdown

    s = data["settings"]
    head = (
        f"`python -m benchmarks.plan_power --pilots {s['pilots']} --runs {s['runs']}`: per cell "
        f"{s['pilots']} planted suites (unequal clusters 2–18), a pilot run on each planned by "
        "`harness plan --run`'s function, then fresh runs of the suite with the candidate "
        "better by exactly the printed lift, read by the gate."
    )
    return head + "\n\n" + markdown(data["rows"])


def nightly_tables(data: dict) -> str:
    from benchmarks.nightly import markdown

    s = data["settings"]
    cmd = f"`python -m benchmarks.nightly --seasons {s['seasons']} --looks {s['looks']}`"
    return cmd + ": " + markdown(data["rows"], s["looks"], s["tasks"], s["clusters"], s["drop"])


def judge_tables(data: dict) -> str:
    reps = data["settings"]["reps"]
    band = 3 * math.sqrt(0.05 * 0.95 / reps)
    accuracies = sorted({(r["sensitivity"], r["specificity"]) for r in data["rows"]})
    sizes = sorted({r["calibration"] for r in data["rows"]})
    lines = [
        f"Coverage of the corrected rate's 95% interval, {reps} planted runs per cell (true "
        f"rate {data['settings']['true rate']:.0%}, {data['settings']['tasks per cluster']} "
        f"tasks per cluster, {data['settings']['trials per task']} trials per task; ±"
        f"{band:.1%} is three binomial standard errors). `{data['settings']['command']}`.",
        "",
        "| clusters | Se / Sp | " + " | ".join(f"{n} labels" for n in sizes) + " |",
        "| --- | --- | " + " | ".join("---" for _ in sizes) + " |",
    ]
    cells = {
        (r["clusters"], r["sensitivity"], r["specificity"], r["calibration"]): r
        for r in data["rows"]
    }
    for g in sorted({r["clusters"] for r in data["rows"]}):
        for se, sp in accuracies:
            row = [cells.get((g, se, sp, n)) for n in sizes]
            text = [
                "—" if r is None else f"{_pct(r['coverage'])} (±{r['mean width'] / 2:.0%})"
                for r in row
            ]
            lines.append(f"| {g} | {se:g} / {sp:g} | " + " | ".join(text) + " |")
    lines += [
        "",
        "(±: half the mean interval width.) Coverage of the pairwise win rate's 95% interval:",
        "",
        "| clusters | preference d | position bias | true win rate | coverage |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in data["win_rows"]:
        lines.append(
            f"| {r['clusters']} | {r['preference']:g} | {r['position bias']:.0%} | "
            f"{_pct(r['truth'])} | {_pct(r['coverage'])} |"
        )
    return "\n".join(lines)


def prediction_tables(data: dict) -> str:
    from benchmarks.prediction import markdown

    return markdown(data)


RENDER = {
    "judge": ("judge_coverage.json", judge_tables),
    "coverage": ("coverage_grid.json", coverage_tables),
    "plans": ("plan_power.json", plan_tables),
    "nightly": ("nightly.json", nightly_tables),
    "prediction": ("prediction.json", prediction_tables),
}


def render_doc(text: str) -> str:
    for name, (file, render) in RENDER.items():
        path = RESULTS / file
        if not path.exists():
            continue
        body = render(json.loads(path.read_text()))
        pattern = re.compile(
            rf"(<!-- begin: {name} -->\n)(?:.*?\n)?(<!-- end: {name} -->)", flags=re.DOTALL
        )
        text = pattern.sub(lambda m, body=body: m.group(1) + body + "\n" + m.group(2), text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the docs are stale")
    args = parser.parse_args()
    old = DOC.read_text()
    new = render_doc(old)
    if args.check:
        if new != old:
            print("docs/statistics.md is stale: run python -m benchmarks.tables", file=sys.stderr)
            raise SystemExit(1)
        return
    DOC.write_text(new)


if __name__ == "__main__":
    main()
