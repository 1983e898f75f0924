"""Texts the terminal and Markdown report renderers share, built from the one formatting
module (``harness.report.render.numbers``)."""

from __future__ import annotations

import shutil
import textwrap

from harness.release.records import NoiseFloor
from harness.report.prediction_records import PredictionCheck
from harness.report.records import (
    Comparison,
    CostSummary,
    InfraSection,
    Latency,
    PassAtK,
    Prediction,
    Report,
    Tokens,
)
from harness.report.render.numbers import count, delta_text, money, pct, rate_text


def noise_floor_text(report: Report) -> str | None:
    """The report's A/A noise floor as ``floor_text`` prints it (None: no A/A arm)."""
    deltas = report.get("class_deltas")
    floor = deltas.get("noise_floor") if deltas else None
    if not deltas or not floor:
        return None
    return floor_text(floor, deltas.get("baseline"))


def floor_text(floor: NoiseFloor, baseline: str | None) -> str:
    """An A/A noise floor with its n and interval, as the report, ``compare`` and ``gate``
    print it: marked when degenerate, and when the A/A arm moved.

    A floor of exactly zero (or from arms sharing trial random numbers) says nothing about
    false-positive rates, so every view that prints it must say so, not just the HTML."""
    n = f"n = {floor['n']} tasks; " if floor.get("n") is not None else ""
    text = (
        f"noise floor (A/A, {floor['arm']} − {baseline}): {delta_text(floor)} "
        f"({n}{floor.get('method')})"
    )
    if floor.get("degenerate"):
        text += f" — DEGENERATE: {floor['degenerate_reason']}"
    elif floor.get("excludes_zero"):
        text += " — the A/A arm moved: the run is noisier than its intervals"
    return text


def retry_text(infra: InfraSection) -> str:
    """Trials retried after an infrastructure error, with the retry rate's interval."""
    n = infra.get("retried_trials", 0)
    rate = infra.get("retry_rate")
    return f"{n} trial(s) retried" + (f", {rate_text(rate, 'trial')}" if rate else "")


def spend_text(cost: CostSummary) -> str | None:
    """What every attempt spent, when some attempts were discarded (retried after an
    infrastructure error, or of unresolved trials); None when there were none."""
    n = cost.get("discarded_attempts") or 0
    if not n:
        return None
    unknown = cost.get("unknown_cost_attempts") or 0
    text = (
        f"all attempts {money(cost.get('spent_usd'))}, of which "
        f"{money(cost.get('discarded_usd'))} on {n} discarded attempt(s)"
    )
    return text + (f" ({unknown} attempt(s) of unknown cost)" if unknown else "")


def tokens_text(tok: Tokens) -> str:
    """An arm's tokens (``usage.tokens``): sums and means per trial over the trials whose
    usage is known, with their n; unknown (never 0) when no trial's usage is known."""
    known = tok.get("known_trials", tok["trials"])
    if known == 0 and tok["trials"]:
        return f"unknown — {tok['note']}"
    per = tok["per_trial"]
    text = (
        f"in {count(tok['in'])} (cached {count(tok['cached'])}), out {count(tok['out'])}; "
        f"per trial in {count(per['in'])}, out {count(per['out'])} (n={known} trials)"
    )
    return text + (f" — {tok['note']}" if tok.get("note") else "")


def select_ks(points: list[PassAtK], limit: int = 10) -> list[PassAtK]:
    """At most ``limit`` of the k entries for display: 1–5, powers of two, and the last."""
    if len(points) <= limit:
        return points
    last = points[-1]["k"]
    want = {1, 2, 3, 4, 5, last} | {2**i for i in range(3, 20) if 2**i < last}
    chosen = [p for p in points if p["k"] in want]
    if len(chosen) > limit:
        chosen = chosen[: limit - 1] + [points[-1]]
    return chosen


def denominator_text(report: Report) -> str:
    s = report.get("settings", {})
    return s.get("denominator_text") or s.get("denominator", "failure")


def unresolved_by_class_text(infra: InfraSection) -> str:
    """'unresolved share by class: a 0/12, b 2/10 (20.0% [5.7%, 51.0%])' (one line)."""
    parts = []
    for row in infra.get("unresolved_by_class") or []:
        text = f"{row['name']} {row['unresolved']}/{row['trials']}"
        if row["unresolved"]:
            text += (
                f" ({100 * row['estimate']:.1f}% [{100 * row['lo']:.1f}%, {100 * row['hi']:.1f}%])"
            )
        parts.append(text)
    return "unresolved share by class: " + (", ".join(parts) if parts else "no trials")


def pair_table_text(c: Comparison, report: Report) -> str:
    """'fixed 8, broke 0, both pass 22, both fail 6', with the must-never failures counted
    beside them: the table counts a task the candidate failed 2 of 5 times as passed."""
    t = c.get("table") or {}
    text = (
        f"fixed {t.get('fixed')}, broke {t.get('broke')}, both pass {t.get('both_pass')}, "
        f"both fail {t.get('both_fail')}"
    )
    mn = report.get("must_never")
    if mn and mn["checks"]:
        text += f"; must-never {mn['failed']}/{mn['trials']} trials failed"
    return text


def must_never_lines(report: Report) -> list[str]:
    """Each must-never check of the candidate, declared by the suite's gate or by tasks
    flagged ``must_never`` (a task it failed once in a must-never class counts here,
    whatever its per-task rate); 'none declared' when there is none."""
    mn = report.get("must_never")
    if not mn or not mn["checks"]:
        return ["must-never: none declared"]
    return [f"{m['name']}: {m['status'].upper()}, {m['message']}" for m in mn["checks"]]


def comparison_notes(c: Comparison) -> list[str]:
    """The estimator behind the headline delta, each arm's rate with n and interval, the
    fixed/broke threshold and any interval warning: shared by terminal and Markdown."""
    out = []
    if c.get("estimator"):
        out.append(f"estimator: {c['estimator']}")
    for side, r in (("baseline", c.get("baseline")), ("candidate", c.get("candidate"))):
        if r and r.get("estimate") is not None:
            out.append(f"{side} {rate_text(r)}")
    if c.get("fixed_rule") and "trial per task per arm" not in str(c.get("design")):
        out.append(f"fixed/broke: {c['fixed_rule']}")
    if c.get("interval_warning"):
        out.append(f"warning: {c['interval_warning']}")
    return out


def interval_text(x: float | None, interval: list | None) -> str:
    """A rate with its interval, e.g. '84.0% [71.0%, 92.0%]' (just the rate when none)."""
    if x is None:
        return "—"
    if not interval or interval[0] is None or interval[1] is None:
        return pct(x)
    return f"{pct(x)} [{pct(interval[0])}, {pct(interval[1])}]"


def fit_check_text(chk: PredictionCheck) -> str:
    """The beta-binomial fit check: fitted vs observed pass^k, each with interval and n."""
    g2 = chk.get("p_value")
    return (
        f"fitted {interval_text(chk.get('fitted'), chk.get('fitted_interval'))} vs observed "
        f"{interval_text(chk.get('observed_unbiased'), chk.get('observed_interval'))}"
        + (f" (n={chk['n']} tasks)" if chk.get("n") else "")
        + (f"; G² fit p = {g2:.2f} on {chk.get('df')} df" if g2 is not None else "")
    )


def fit_text(pred: Prediction) -> str:
    """The beta-binomial fit behind a prediction: its a and b, or why it is degenerate
    (a fit at the concentration cap has no a and b worth printing)."""
    name = pred.get("model") or "beta-binomial"
    if pred.get("degenerate"):
        return f"{name} fit DEGENERATE: {pred['degenerate']}"
    shares = [
        f"{label} share {100 * share:.1f}%"
        for label, share in (
            ("always-pass", pred.get("always_pass")),
            ("never-pass", pred.get("never_pass")),
        )
        if share
    ]
    lead = ", ".join([name, *shares]) + (", " if shares else " ")
    return f"{lead}a={pred['a']:.2f}, b={pred['b']:.2f}"


def latency_text(lat: Latency) -> str:
    """Latency p50 and p95 with their order-statistic intervals, in seconds."""

    def one(key: str, seconds: float, iv: list[float] | None) -> str:
        ends = f" [{iv[0]:.2f}, {iv[1]:.2f}]" if iv else ""
        return f"{key} {seconds:.2f} s{ends}"

    p50 = one("p50", lat["p50_s"], lat.get("p50_interval"))
    return f"{p50}, {one('p95', lat['p95_s'], lat.get('p95_interval'))}"


def fit_lines(lines: list[str], width: int | None = None) -> list[str]:
    """Plain lines wrapped at spaces to ``width`` (default: the terminal's, 80 when piped),
    each continuation indented two past its line's own indent, so a section of sentences
    reads at any width without rich cropping or overrunning it."""
    width = width or shutil.get_terminal_size((80, 24)).columns
    out: list[str] = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip(" ")))
        out += textwrap.wrap(
            line,
            width=max(width, len(indent) + 20),
            subsequent_indent=indent + "  ",
            break_on_hyphens=False,
            break_long_words=False,
        ) or [line]
    return out
