"""End to end through the real CLI: a simulated candidate with a planted +10 points."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import yaml

from harness import exitcodes


def _suite(tmp_path, shift, **extra):
    tasks = [
        {
            "id": f"q{i:03d}",
            "cluster": f"c{i % 50}",
            "class": ["alpha", "beta"][i % 2],
            "instruction": f"Say {i}",
            "graders": [{"type": "answer_match", "mode": "exact", "expected": str(i)}],
            "solution": {"answer": str(i)},
        }
        for i in range(200)
    ]
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
    suite = {
        "name": "release-sim",
        "seed": 7,
        "trials": 1,
        "tasks": ["tasks.yaml"],
        "concurrency": 16,
        "sandbox": "local",
        "arms": [
            {"name": "base", "agent": "simulated", "params": {"a": 3.0, "b": 2.0}},
            {"name": "cand", "agent": "simulated", "params": {"a": 3.0, "b": 2.0, "shift": shift}},
        ],
        "report": {"primary": {"baseline": "base", "candidate": "cand"}},
        "gate": {"rule": "improvement", "n_resamples": 2000},
        **extra,
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def test_run_gate_compare_plan_history(tmp_path, cli):
    url = f"sqlite:///{tmp_path / 'h.db'}"
    suite = _suite(tmp_path, 0.1, aa=True, repeats={"mode": "adaptive", "max_k": 3})
    run = cli("run", str(suite), "--store", url, "-q")
    assert run.returncode == 0, run.stderr
    gate = cli("gate", "latest", "--store", url, "--json", "--junit", str(tmp_path / "j.xml"))
    assert gate.returncode == exitcodes.GATE_IMPROVEMENT, gate.stdout + gate.stderr
    g = json.loads(gate.stdout)
    assert g["verdict"] == "improvement" and g["may_ship"]
    assert g["noise_floor"]["arm"] == "base-aa"
    assert g["primary"]["estimator"].startswith("phase one only")
    assert g["primary"]["all_trials"]["estimate"] is not None
    assert not g["noise_floor"]["degenerate"]  # the simulated arms draw independently
    d = g["design"]
    assert "adaptive repeats" in d["design"] and d["trials"] < d["full_repeats_trials"]
    assert ET.parse(tmp_path / "j.xml").getroot().get("failures") == "0"

    (tmp_path / "ni.yaml").write_text("rule: non-inferiority\nmargin: 0.02\nn_resamples: 2000\n")
    ni = cli("gate", "latest", "--store", url, "--policy", str(tmp_path / "ni.yaml"), "--markdown")
    assert ni.returncode == exitcodes.GATE_NON_INFERIOR, ni.stdout + ni.stderr
    assert "non-inferior" in ni.stdout and "does not show a gain" in ni.stdout

    run_id = g["run_id"]
    cmp = cli(
        "compare",
        f"{run_id}:base",
        f"{run_id}:base-aa",
        "--store",
        url,
        "--json",
    )
    assert cmp.returncode == 0, cmp.stderr
    c = json.loads(cmp.stdout)
    assert c["lo"] <= 0 <= c["hi"] and c["pairing"] == "per-trial (shared seed blocks)"

    plan = cli("plan", "--run", run_id, "--store", url, "--json")
    assert json.loads(plan.stdout)["n_tasks"] == 200
    hist = cli("history", "release-sim", "--store", url)
    assert hist.returncode == 0 and run_id in hist.stdout


def test_planted_regression_and_refused_compare(tmp_path, cli):
    url = f"sqlite:///{tmp_path / 'h.db'}"
    neg = cli("run", str(_suite(tmp_path / "neg", -0.1)), "--store", url, "-q")
    assert neg.returncode == 0, neg.stderr
    gate = cli("gate", "latest", "--store", url)
    assert gate.returncode == exitcodes.GATE_REGRESSION, gate.stdout + gate.stderr
    assert "REGRESSION" in gate.stdout
    first = json.loads(cli("gate", "latest", "--store", url, "--json").stdout)["run_id"]
    # a second run on fewer tasks cannot be paired with the first
    other = tmp_path / "other"
    _suite(other, 0.0)
    doc = yaml.safe_load((other / "tasks.yaml").read_text())
    (other / "tasks.yaml").write_text(yaml.safe_dump({"tasks": doc["tasks"][:150]}))
    assert cli("run", str(other / "suite.yaml"), "--store", url, "-q").returncode == 0
    second = json.loads(cli("gate", "latest", "--store", url, "--json").stdout)["run_id"]
    refused = cli("compare", f"{first}:base", f"{second}:base", "--store", url)
    assert refused.returncode == exitcodes.NOT_COMPARABLE
    assert "task sets differ: 50 only in" in refused.stdout
