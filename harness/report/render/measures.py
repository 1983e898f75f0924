"""The measures section of an arm (``harness.report.measures``) as plain lines: the terminal,
Markdown and HTML reports all print these, so each number reads the same in every view."""

from __future__ import annotations

from harness.report.measures import Measures
from harness.report.render.numbers import pct, rate_text
from harness.stats.classification import METRICS

NAMES = {
    "precision": "precision",
    "recall": "recall",
    "specificity": "specificity",
    "f1": "F1",
    "accuracy": "accuracy",
}
CELLS = (
    ("tp", "TP (positive, flagged)"),
    ("fn", "FN (positive, missed)"),
    ("fp", "FP (negative, flagged)"),
    ("tn", "TN (negative, left alone)"),
)


def measures_lines(m: Measures | None) -> list[str]:
    """One line per measure the arm has (none when it has none)."""
    if not m:
        return []
    out: list[str] = []
    if cls := m.get("classification"):
        head = (
            f"classification ({cls['tasks']} tasks declare `positive`: "
            f"{cls['positive_tasks']} positive, {cls['negative_tasks']} negative): "
        )
        parts = []
        for name in METRICS:
            rec = cls["metrics"].get(name)
            if rec is None:
                parts.append(f"{NAMES[name]} undefined ({cls['undefined'].get(name, '')})")
            else:
                parts.append(f"{NAMES[name]} {rate_text(rec)}")
        out.append(head + "; ".join(parts))
        trials = cls["confusion_trials"]
        out.append(
            "confusion matrix (counted trials): "
            + ", ".join(f"{label} {trials[key]}" for key, label in CELLS)
        )
    if mac := m.get("macro"):
        classes = ", ".join(f"{k} {v}" for k, v in mac["classes"].items())
        out.append(
            f"unbalanced classes ({classes} tasks): macro average {rate_text(mac['macro'])} "
            f"(each class counts once) beside micro {rate_text(mac['micro'])} (each task once)"
        )
    if sc := m.get("scores"):
        hist = ", ".join(f"{b['lo']:.1f}–{b['hi']:.1f}: {b['trials']}" for b in sc["histogram"])
        out.append(
            f"partial-credit score: mean {rate_text(sc['mean'])}; distribution over "
            f"{sc['trials']} trials {hist}; {pct(sc['share_bottom'])} of trials below 0.4"
        )
    if other := m.get("other_estimand"):
        out.append(f"for the other estimand, {other.get('estimand', '')}: {rate_text(other)}")
    return out
