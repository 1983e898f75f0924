"""Render report data for a terminal. Every rate is printed with its n and interval."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def rate_text(s: dict[str, Any] | None) -> str:
    if not s:
        return "no resolved trials"
    return (
        f"{pct(s['estimate'])} [{pct(s['lo'])}, {pct(s['hi'])}] "
        f"(n={s['n']} {s.get('unit', 'task')}s)"
    )


def render(report: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    run = report["run"]
    console.print(
        f"[bold]Run {run['id']}[/] suite [bold]{run['suite']}[/] · {run['status']} · "
        f"sandbox {run['sandbox']} · harness {run['harness_version']} · "
        f"config {run['config_hash'][:12]}"
    )
    table = Table(title="Per arm", title_justify="left")
    for col in (
        "arm",
        "tasks",
        "trials sched/done/unresolved",
        "success (95% CI, n)",
        "pass^k",
        "unstable",
    ):
        table.add_column(col)
    for name, a in report["arms"].items():
        passk = " ".join(f"k={p['k']}:{pct(p['estimate'])}" for p in a["pass_hat_k"])
        table.add_row(
            name,
            f"{a['tasks']} ({a['clusters']} clusters)",
            f"{a['trials_scheduled']}/{a['trials_completed']}/{a['trials_unresolved']}",
            rate_text(a["success"]),
            passk or "—",
            str(a.get("unstable_tasks", "—")),
        )
    console.print(table)
    any_arm = next(iter(report["arms"].values()), None)
    if any_arm and any_arm.get("success"):
        console.print(
            f"[dim]Estimand: {report['estimand']}. Interval: "
            f"{any_arm['success']['method']}. Unresolved trials count as "
            f"{'failures' if any_arm['denominator'] == 'failure' else 'excluded'}.[/]"
        )
