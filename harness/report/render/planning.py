"""Terminal views of planning a release: the power plan (``harness plan``) and a suite's
history of runs and moves (``harness history``).

Every rate is printed with n and its interval; the number formats are the compare and gate
renderers' (``harness.report.render.release``).
"""

from __future__ import annotations

from harness.release.records import History, Sensitivity, TasksNeeded, ThresholdPlan
from harness.report.render.narrow import dropped_note, fit
from harness.report.render.numbers import MISSING, ci, pct
from harness.report.render.numbers import points as pts


def print_plan(p: TasksNeeded | Sensitivity | ThresholdPlan) -> None:
    from rich.console import Console

    con = Console()
    if "bar" in p:
        tasks = f"{p['tasks']:,} tasks" if p["tasks"] else "more than 20,000 tasks"
        con.print(
            f"[bold]Tasks needed[/] to show the rate exceeds {pct(p['bar'])} when it is "
            f"{pct(p['rate'])} (power {p['power']:.0%}): {tasks}"
            + (f" (design effect {p['design_effect']:g})" if p["design_effect"] != 1 else "")
        )
        _assumed(con, p)
        return
    if "unpaired_per_arm" in p:
        con.print(
            f"[bold]Tasks needed[/] for the gate to pass {pct(p['base'])} → "
            f"{pct(p['base'] + p['lift'])} with power {p['power']:.0%}, both arms on the same "
            "tasks:"
        )
        for row in p["paired"]:
            needed = row["tasks"]
            what = (
                f"{needed:,} tasks (about {row['discordant_tasks']} discordant); simulated "
                f"power there {row['simulated_power']:.1%}"
                if needed
                else "more than 20,000 tasks"
            )
            con.print(f"  discordance {row['discordance']:.0%}: {what}")
        if p["discordance_assumed"]:
            con.print("  [dim]measure the discordance from a pilot run: harness plan --run RUN[/]")
        con.print(
            f"  [dim]two independent runs instead would need {p['unpaired_per_arm']:,} tasks "
            "per arm (normal formula; the gate compares arms on the same tasks)[/]"
        )
        _assumed(con, p)
        return
    if not p.get("n_tasks"):
        con.print("no paired tasks in this run")
        return
    con.print(
        f"[bold]Run {p['run_id']}[/] ({p['baseline']} → {p['candidate']}): {p['n_tasks']} "
        f"tasks, {p['n_clusters']} clusters, baseline {pct(p['baseline_rate'])} "
        f"[{pct(p['baseline_interval'][0])}, {pct(p['baseline_interval'][1])}] "
        f"(n={p['n_tasks']} tasks), measured "
        f"discordance {p['discordance']:.1%} ({p['discordant_tasks']} tasks differ)"
    )
    if p.get("mde") is None:
        con.print(
            f"  the gate would not reach power {p['power']:.0%} on this suite for any lift "
            f"(at most {p['simulated_power']:.0%}): add tasks or clusters"
        )
    else:
        con.print(
            f"  smallest lift the gate passes with power {p['power']:.0%} on the next run: "
            f"{pts(p['mde'], False)} pts (simulated power there {p['simulated_power']:.1%})"
        )
    _assumed(con, p)


def _assumed(con, p: TasksNeeded | Sensitivity | ThresholdPlan) -> None:
    """What the plan assumed: the rule and test, and the model it simulated."""
    con.print(f"  [dim]gate assumed: {p['rule']}[/]")
    con.print(f"  [dim]simulated: {p['model']}; {p['simulated_runs']:,} runs per point[/]")


# long: one table of runs, then the notes under it (moves, looks, subset rows), in order.
def print_history(h: History) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    if not h["runs"]:
        con.print(f"no runs of suite '{h['suite']}' in this store")
        return
    t = Table(title=f"History of suite {h['suite']} (oldest first)", title_justify="left")
    t.add_column("run", no_wrap=True)
    for col in (
        "started",
        "arm",
        f"rate [{h['confidence']:.0%}]",
        "tasks",
        "trials",
        "cost $",
        "images",
        "graders",
        "move vs previous",
    ):
        t.add_column(col)
    notes: list[str] = []
    any_floor = False
    for e in h["runs"]:
        any_floor |= e["noise_floor"] is not None
        for a in e["arms"]:
            r = f"{pct(a['estimate'])} {ci(a)}" if a["estimate"] is not None else MISSING
            if a.get("basis", "full run") != "full run":
                r += " *"
                notes.append(f"{e['run_id']} {a['arm']} *: {a['basis']}")
            m = a["move"]
            if m is None:
                move = ""
            elif m.get("cannot_pair"):
                move = "[yellow]cannot pair[/]"
                notes.append(
                    f"{e['run_id']} {a['arm']} cannot be paired with {m['from_run']}: "
                    + "; ".join(m["cannot_pair"])
                )
            else:
                move = f"{pts(m['estimate'])} [{pts(m['lo'])}, {pts(m['hi'])}]"
                if m.get("call") in ("regression", "improvement"):
                    move += f" {m['call']}"
                if m["beyond_noise_floor"]:
                    move = f"[red]{move} beyond A/A floor[/]"
                if not m["paired"]:
                    move += " †"
                    notes.append(f"{e['run_id']} {a['arm']} †: {m.get('basis', 'unpaired')}")
            t.add_row(
                e["run_id"],
                (e["started_at"] or "")[:16].replace("T", " "),
                a["arm"],
                r,
                str(a["n_tasks"]),
                str(a["n_trials"]),
                "—" if a["cost_usd"] is None else f"{a['cost_usd']:.2f}",
                a["images"],
                a["graders"],
                move,
            )
    dropped = fit(t, con.width, ["graders", "images", "cost $", "trials", "tasks", "started"])
    con.print(t)
    if note := dropped_note(dropped, con):
        con.print(f"[dim]{note}[/]")
    for n in notes:
        con.print(f"[yellow]{n}[/]")
    for e in h["runs"]:
        f = e["noise_floor"]
        if f and f.get("degenerate"):
            con.print(f"[yellow]{e['run_id']}: {f['degenerate_reason']}[/]")
    if any(a.get("subset_method") for e in h["runs"] for a in e["arms"]):
        con.print("rows without *: full runs (every task of the suite)")
    if not any_floor:
        con.print("no A/A arm in these runs: no noise floor, so no move is flagged (aa: true)")
    if h.get("sequential"):
        con.print(f"[dim]moves read sequentially: {h['schedule']}[/]")
    else:
        con.print(
            "[dim]each move's interval is at its own level: read night after night, some "
            "move will look like a regression by chance; --sequential spends the error rate "
            "over the looks[/]"
        )
