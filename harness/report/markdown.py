"""Render report data as Markdown (for a pull-request comment or a release ticket)."""

from __future__ import annotations

from typing import Any

from harness.report.terminal import pct, rate_text


def render_markdown(report: dict[str, Any]) -> str:
    run = report["run"]
    lines = [
        f"## Run `{run['id']}` — suite `{run['suite']}`",
        "",
        f"Status {run['status']} · sandbox {run['sandbox']} · harness {run['harness_version']} "
        f"· config `{run['config_hash'][:12]}` · seed {run['seed']}",
        "",
        "| arm | tasks | clusters | trials sched / done / unresolved | success (95% CI, n) | pass^k |",
        "| --- | ---: | ---: | --- | --- | --- |",
    ]
    for name, a in report["arms"].items():
        passk = ", ".join(f"k={p['k']}: {pct(p['estimate'])}" for p in a["pass_hat_k"]) or "—"
        lines.append(
            f"| {name} | {a['tasks']} | {a['clusters']} | {a['trials_scheduled']} / "
            f"{a['trials_completed']} / {a['trials_unresolved']} | {rate_text(a['success'])} "
            f"| {passk} |"
        )
    lines += ["", f"*Estimand:* {report['estimand']}. *Sampling unit:* {report['sampling_unit']}."]
    return "\n".join(lines)
