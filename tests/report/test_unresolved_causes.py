"""Unresolved trials name their cause in every output: kind, count, one example message and
one trial id, per arm."""

from __future__ import annotations

import json
import re
import threading

import httpx
import yaml

from harness.report.causes import cause_kind, unresolved_causes
from tests.cli.test_usage_errors import _main
from tests.conftest import write_suite


def test_causes_are_grouped_by_status_and_error_type_most_common_first():
    rows = [
        ("a", "harness_error", "KeyError: 'x'", 3),
        ("a", "infra_error", "SandboxError: container died", 4),
        ("a", "infra_error", "SandboxError: daemon gone", 7),
        ("a", "grader_error", "grader crashed while reading state", 9),
        ("b", "infra_error", "SandboxError: daemon gone", 8),
    ]
    out = unresolved_causes(rows)
    a = out["a"]["causes"]
    assert [(c["kind"], c["count"], c["trial_id"]) for c in a] == [
        ("infra_error: SandboxError", 2, 4),
        ("harness_error: KeyError", 1, 3),
        ("grader_error", 1, 9),
    ]
    assert a[0]["example"] == "container died"  # the type is in the kind already
    assert out["b"]["causes"][0]["trial_id"] == 8 and out["a"]["other"] == 0
    assert cause_kind("failed", "") == "failed"


def test_top_causes_then_a_count_of_the_rest():
    rows = [("a", "harness_error", f"E{i}: boom", i) for i in range(8)]
    out = unresolved_causes(rows)["a"]
    assert len(out["causes"]) == 5 and out["other"] == 3


def test_every_output_names_the_cause(tmp_path):
    suite = write_suite(tmp_path / "s", n_tasks=3)
    (suite.parent / "broken_agent.py").write_text(
        "from harness.agents import Agent, AgentResult\n\n\n"
        "class Broken(Agent):\n"
        "    name = 'broken'\n\n"
        "    async def run(self, ctx) -> AgentResult:\n"
        "        import no_such_module_xyz  # noqa: F401\n"
    )
    doc = yaml.safe_load(suite.read_text())
    doc["arms"][0]["agent"] = "broken_agent:Broken"
    doc["arms"][0].pop("params", None)  # the simulated agent's; Broken takes none
    suite.write_text(yaml.safe_dump(doc))
    store = f"sqlite:///{tmp_path}/h.db"
    code, terminal, err = _main("run", str(suite), "--store", store, "-q")
    # An exception out of a module:Class agent's code is the agent's failure (issue 14):
    # resolved as failed, with its kind, and never an unresolved harness error.
    assert code == 0, err
    needle = "No module named 'no_such_module_xyz'"
    # the run ends with the one-screen summary; the causes are in the report's section
    code, terminal, _ = _main("report", "--section", "unresolved", "--store", store)
    assert code == 0
    assert "6× failed: agent_error" in terminal and needle in terminal

    code, out, _ = _main("report", "--json", "--store", store)
    arm = json.loads(out)["arms"]["base"]
    assert arm["unresolved_causes"]["causes"] == []
    [cause] = arm["agent_failure_causes"]["causes"]
    assert cause["count"] == 6 and needle in cause["example"]
    assert isinstance(cause["trial_id"], int)

    code, md, _ = _main("report", "--markdown", "--store", store)
    assert "Failed by the agent's own fault" in md and "no\\_such\\_module\\_xyz" in md

    html_file = tmp_path / "report.html"
    code, _, err = _main("report", "--store", store, "--html", str(html_file), "-q")
    assert code == 0, err
    html = html_file.read_text()
    assert "Failed by the agent's own fault (by kind)" in html
    row = re.search(
        r"<tr><td>base</td><td><code>failed: agent_error</code></td>"
        r"<td class='n'>(\d+)</td>",
        html,
    )
    assert row and int(row.group(1)) == cause["count"], "by-kind count (n) in the HTML report"
    _viewer_shows_failure_kind(store, cause["trial_id"], "agent_error")


def _viewer_shows_failure_kind(store: str, trial_id: int, kind: str) -> None:
    """The trial page has a 'failure kind' fact and the run's trial list a column with it."""
    from harness.store import Store
    from harness.viewer.server import make_server

    s = Store(store)
    try:
        run_id = s.trial(trial_id).run_id
    finally:
        s.close()
    server = make_server(store, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        with httpx.Client(base_url=base, timeout=30) as client:
            page = client.get(f"/trial/{trial_id}").text
            facts = dict(re.findall(r"<tr><th>([^<]+)</th><td>(.*?)</td></tr>", page))
            assert facts.get("failure kind") == f"<code>{kind}</code>", facts
            listing = client.get(f"/run/{run_id}/trials").text
            assert "<th>failure kind</th>" in listing
            assert f'<a href="/trial/{trial_id}">' in listing
            assert listing.count(f'<code class="failure-kind">{kind}</code>') == 6
    finally:
        server.shutdown()
        server.server_close()
