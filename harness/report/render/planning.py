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
        con.print(
            f"[bold]Tasks needed[/] to show the rate exceeds {pct(p['bar'])} when it is "
            f"{pct(p['rate'])} (α = {p['alpha']:g} one-sided, power {p['power']:.0%}): "
            f"{p['tasks']:,} tasks"
            + (f" (design effect {p['design_effect']:g})" if p["design_effect"] != 1 else "")
        )
        con.print(
            "  [dim]independent tasks assumed; with clusters pass --design-effect 1 + (m − 1)ρ[/]"
        )
        return
    if "unpaired_per_arm" in p:
        con.print(
            f"[bold]Tasks needed[/] to detect {pct(p['base'])} → {pct(p['base'] + p['lift'])} "
            f"(α = {p['alpha']:g} two-sided, power {p['power']:.0%})"
        )
        con.print(f"  unpaired (two independent runs): {p['unpaired_per_arm']:,} tasks per arm")
        if p["discordance_assumed"]:
            con.print("  paired (both arms on the same tasks), at assumed discordance:")
        for row in p["paired"]:
            con.print(
                f"    discordance {row['discordance']:.0%}: {row['tasks']:,} tasks, of which "
                f"about {row['discordant_tasks']} discordant ({row['discordance']:.0%} of "
                f"{row['tasks']:,})"
            )
            if row.get("exact_discordant_needed"):
                con.print(
                    f"      [dim]the exact McNemar test at this win rate "
                    f"({row['win_rate']:.0%}) needs about {row['exact_discordant_needed']} "
                    f"discordant tasks: {row['tasks_for_exact_test']:,} tasks[/]"
                )
        if p["discordance_assumed"]:
            con.print("  [dim]measure the discordance from a pilot run: harness plan --run RUN[/]")
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
    con.print(
        f"  smallest lift detectable (α = {p['alpha']:g}, power {p['power']:.0%}): paired "
        f"{pts(p['mde_paired'], False) if p['mde_paired'] else '—'} pts; unpaired "
        f"{pts(p['mde_unpaired'], False) if p['mde_unpaired'] else '—'} pts"
    )
    if p.get("mde_paired_clusters"):
        con.print(
            f"  counting clusters, not tasks, as the independent unit (cluster-level "
            f"discordance {p['cluster_discordance']:.1%}): paired "
            f"{pts(p['mde_paired_clusters'], False)} pts"
        )


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
            m = a["move"]
            if m is None:
                move = ""
            elif not m["paired"]:
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
