"""The release gate's checks as JUnit XML, for CI systems that show test results.

One testcase per check: each must-never class, unresolved coverage, retry balance, and the primary
comparison (or threshold). Inconclusive and no-verdict are failures of their check, never a
pass. The document is built with ``xml.etree.ElementTree``, which escapes every attribute and
text node.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from harness.release.records import GateResult
from harness.report.render.release import balance_text, decision_lines


def gate_cases(g: GateResult) -> list[tuple[str, str | None, str, str]]:
    """(name, failure type or None, message, detail) per check of the gate result ``g``."""
    cases: list[tuple[str, str | None, str, str]] = []
    for m in g["must_never"]:
        kind = None if m["status"] == "held" else m["status"]
        cases.append((m["name"], kind, m["message"], ""))
    cov = g["coverage"]
    msg = ", ".join(f"{a}: {v['share']:.1%}" for a, v in cov["arms"].items())
    cases.append(
        (
            "unresolved coverage",
            None if cov["status"] == "ok" else "exceeded",
            f"{msg} (limit {cov['limit']:.1%})",
            "",
        )
    )
    if text := balance_text(g):
        imbalanced = g["balance"]["status"] == "imbalanced"
        cases.append(("retry balance", "imbalanced" if imbalanced else None, text, ""))
    head, lines = decision_lines(g)
    decision = g["threshold"] or g["primary"]
    assert decision is not None  # a gate without a threshold rule always has a comparison
    stat, why = decision["verdict"], decision["why"]
    name = (
        f"threshold {g['candidate']} > {g['policy']['bar']:g}"
        if g.get("threshold")
        else f"primary comparison {g['baseline']} -> {g['candidate']} ({g['policy']['rule']})"
    )
    kind = None if stat in ("improvement", "non-inferior") else stat
    cases.append((name, kind, f"{stat}: {why}", head + "\n" + "\n".join(lines)))
    return cases


def gate_junit(g: GateResult) -> str:
    """The gate result ``g`` as a JUnit XML document (one testsuite)."""
    cases = gate_cases(g)
    counts = {"tests": str(len(cases)), "failures": str(sum(1 for c in cases if c[1]))}
    root = ET.Element("testsuites", {"name": "harness gate", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": f"gate {g['run_id']}", **counts})
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "verdict", "value": str(g["verdict"])})
    ET.SubElement(props, "property", {"name": "exit_code", "value": str(g["exit_code"])})
    for name, kind, message, detail in cases:
        case = ET.SubElement(suite, "testcase", {"classname": "harness.gate", "name": name})
        if kind:
            failure = ET.SubElement(case, "failure", {"type": kind, "message": message})
            failure.text = detail or message
        else:
            ET.SubElement(case, "system-out").text = message
    ET.indent(root, space="  ")
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"
