"""Release decisions: compare, gate, plan (power) and history.

Exit codes: compare refuses unpairable sides with NOT_COMPARABLE (7); gate exits with one
code per verdict (``harness.exitcodes``: 0 improvement, 10 non-inferior, 11 inconclusive,
12 regression, 13 no-verdict, 14 must-never violated).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from harness import exitcodes
from harness.commands.options import RUN_FORMS, StoreOpt

if TYPE_CHECKING:
    from harness.release.records import Sensitivity, TasksNeeded, ThresholdPlan


def register(app: typer.Typer) -> None:
    app.command()(compare)
    app.command()(gate)
    app.command(name="plan")(plan_cmd)
    app.command()(history)


def _store(url: str | None):
    from harness.store.refs import open_for_reading

    return open_for_reading(url)


def _dump(obj) -> None:
    typer.echo(json.dumps(obj, indent=2, default=str))


def compare(
    a: Annotated[
        str,
        typer.Argument(
            metavar="A",
            help=f"Baseline: RUN or RUN:ARM (RUN is {RUN_FORMS}).",
            show_default=False,
        ),
    ],
    b: Annotated[
        Optional[str],  # noqa: UP045
        typer.Argument(
            metavar="B",
            help="Candidate: RUN or RUN:ARM (default: A's run, its primary candidate).",
            show_default=False,
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Pair even if tasks, graders or images differ.")
    ] = False,
    allow_judge_change: Annotated[
        bool,
        typer.Option(
            "--allow-judge-change",
            help="Pair sides judged by different judge setups (the comparison says so).",
        ),
    ] = False,
    confidence: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            metavar="LEVEL",
            help="Two-sided interval level (default: the run's report.confidence).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON on stdout.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Markdown on stdout.")] = False,
    store: StoreOpt = None,
) -> None:
    """Paired comparison of two arms on the same tasks (candidate − baseline).

    An omitted ARM means the run's only arm, else its primary baseline (A) or candidate (B).
    Refuses (exit 7) when the sides differ in tasks, grader versions, image ids, budgets or
    environment versions, naming each difference; --force warns and proceeds. Sides judged
    by different judge setups are refused in one line (exit 2) unless
    --allow-judge-change.
    """
    from harness.release.api import compare_runs
    from harness.report.render.release import compare_markdown, print_compare

    if b is None:  # `harness compare RUN`: the run's primary baseline against its candidate
        b = a.split(":", 1)[0]
    c = compare_runs(
        _store(store),
        a,
        b,
        force=force,
        confidence=confidence,
        allow_judge_change=allow_judge_change,
    )
    if as_json:
        _dump(c)
    elif markdown:
        typer.echo(compare_markdown(c), nl=False)
    else:
        print_compare(c)
    if c["refused"]:
        raise typer.Exit(exitcodes.NOT_COMPARABLE)


def gate(
    run_id: Annotated[
        str,
        typer.Argument(metavar="RUN", help=f"The run ({RUN_FORMS}).", show_default=False),
    ],
    policy: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--policy",
            metavar="FILE",
            help="Gate policy YAML: the gate block, with or without a top-level 'gate:' "
            "(default: the gate: the run's suite declared when it ran).",
        ),
    ] = None,
    suite_file: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--suite",
            metavar="FILE",
            help="Apply the gate: this suite file declares now (e.g. to an older run).",
        ),
    ] = None,
    fmt: Annotated[
        str, typer.Option("--format", metavar="FORMAT", help="terminal, markdown, junit or json.")
    ] = "terminal",
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Same as --format markdown.")
    ] = False,
    junit: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--junit", metavar="FILE", help="Also write JUnit XML to FILE."),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Apply the release rule: improvement, non-inferior, inconclusive, regression or
    no-verdict, with the numbers behind it. Exit 0 improvement, 10 non-inferior,
    11 inconclusive, 12 regression, 13 no-verdict, 14 must-never violated."""
    from harness.release.api import gate_run
    from harness.report.render.junit import gate_junit
    from harness.report.render.release import gate_markdown, print_gate

    fmt = "json" if as_json else "markdown" if markdown else fmt
    if fmt not in ("terminal", "markdown", "junit", "json"):
        typer.echo(f"error: unknown --format '{fmt}'", err=True)
        raise typer.Exit(exitcodes.BAD_CONFIG)
    if policy and suite_file:
        typer.echo("error: give --policy or --suite, not both", err=True)
        raise typer.Exit(exitcodes.BAD_CONFIG)
    from harness.store.refs import no_arm

    why = "the gate judges the run's declared comparison (set arms with the policy's primary:)"
    g = gate_run(_store(store), no_arm(run_id, "gate", why) or "latest", policy or suite_file)
    if junit:
        junit.write_text(gate_junit(g))
    if fmt == "json":
        _dump(g)
    elif fmt == "markdown":
        typer.echo(gate_markdown(g), nl=False)
    elif fmt == "junit":
        typer.echo(gate_junit(g), nl=False)
    else:
        print_gate(g)
    raise typer.Exit(g["exit_code"])


# long: the signature declares one typer option per ``harness plan`` flag (three modes).
def plan_cmd(
    base: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option("--base", metavar="RATE", help="Baseline success rate, e.g. 0.85."),
    ] = None,
    lift: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option("--lift", metavar="LIFT", help="Lift to detect, e.g. 0.05 (5 points)."),
    ] = None,
    discordance: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--discordance",
            metavar="SHARE",
            help="Share of tasks the arms disagree on (pilot run).",
        ),
    ] = None,
    run: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--run", metavar="RUN", help="Instead: what could this run have detected?"),
    ] = None,
    bar: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--bar",
            metavar="RATE",
            help="Instead: tasks to show the rate exceeds this bar (--rate).",
        ),
    ] = None,
    rate: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--rate", metavar="RATE", help="With --bar: the agent's assumed true rate, e.g. 0.9."
        ),
    ] = None,
    design_effect: Annotated[
        float,
        typer.Option(
            metavar="X", help="With --bar: variance inflation from clusters, 1 + (m − 1)ρ."
        ),
    ] = 1.0,
    alpha: Annotated[
        float,
        typer.Option(
            metavar="LEVEL",
            help="The gate's one-sided error rate (1 − confidence) when no --policy is given.",
        ),
    ] = 0.05,
    power: Annotated[
        float, typer.Option(metavar="P", help="Chance of detecting the effect if it is real.")
    ] = 0.8,
    policy: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--policy",
            metavar="FILE",
            help="The gate policy that will judge the run (default: the run's suite gate:, "
            "else the improvement rule, one-sided at --alpha).",
        ),
    ] = None,
    heterogeneity: Annotated[
        float,
        typer.Option(
            metavar="SD",
            help="With --run: how much the change varies between clusters (SD on the logit "
            "scale; 0 assumes it helps every cluster alike).",
        ),
    ] = 0.5,
    as_json: Annotated[bool, typer.Option("--json", help="JSON on stdout.")] = False,
    store: StoreOpt = None,
) -> None:
    """Power planning, by simulating the gate that will judge the run: tasks needed for a lift
    (--base, --lift), tasks to show a rate above a bar (--bar, --rate), or the smallest lift
    the gate would pass on the next run of a finished run's suite (--run). Each plan names
    the rule and test it assumed and the model it simulated."""
    from harness.report.render.planning import print_plan

    gate_policy = None
    if policy is not None:
        from harness.release.api import load_policy

        gate_policy = load_policy(policy)

    if bar is not None:
        from harness.release.power import tasks_for_threshold

        if rate is None:
            typer.echo("error: --bar needs --rate (the agent's assumed true rate)", err=True)
            raise typer.Exit(exitcodes.BAD_CONFIG)
        out: TasksNeeded | Sensitivity | ThresholdPlan
        try:
            out = tasks_for_threshold(rate, bar, alpha, power, design_effect, gate_policy)
        except ValueError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(exitcodes.BAD_CONFIG) from None
    elif run:
        from harness.release.api import run_power
        from harness.store.refs import no_arm

        why = "the sensitivity is of the run's declared comparison"
        out = run_power(
            _store(store),
            no_arm(run, "plan --run", why) or "latest",
            alpha,
            power,
            heterogeneity,
            gate_policy,
        )
    else:
        if base is None or lift is None:
            typer.echo("error: give --base and --lift, or --run RUN", err=True)
            raise typer.Exit(exitcodes.BAD_CONFIG)
        from harness.release.power import tasks_needed

        try:
            out = tasks_needed(base, lift, discordance, alpha, power, gate_policy)
        except ValueError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(exitcodes.BAD_CONFIG) from None
    if as_json:
        _dump(out)
    else:
        print_plan(out)


def history(
    suite: Annotated[
        str,
        typer.Argument(
            metavar="SUITE",
            help=f"A suite's name, its file, or a run of it ({RUN_FORMS}).",
            show_default=False,
        ),
    ],
    limit: Annotated[int, typer.Option(metavar="N", help="Most recent runs to show.")] = 30,
    sequential: Annotated[
        bool,
        typer.Option(
            "--sequential",
            help="Spend the error rate over the looks (nightly reading): a season of looks "
            "calls a false regression with probability at most 5%.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON on stdout.")] = False,
    store: StoreOpt = None,
) -> None:
    """A suite's runs over time: rates with intervals, cost, image and grader versions,
    moves beyond the A/A noise floor, and which runs cannot be paired."""
    from harness.release.api import history as suite_history
    from harness.release.api import suite_name_of
    from harness.report.render.planning import print_history

    db = _store(store)
    h = suite_history(db, suite_name_of(suite, db), limit, sequential=sequential)
    if as_json:
        _dump(h)
    else:
        print_history(h)
