"""Task lists for subset tests: classes and clusters to stratify by, answers the oracle knows."""

from __future__ import annotations


def subset_tasks(n: int, clusters: int = 4) -> list[dict]:
    """n answer-only tasks: every third 'hard', the rest 'easy', in ``clusters`` clusters."""
    return [
        {
            "id": f"t{i:02d}",
            "class": "easy" if i % 3 else "hard",
            "cluster": f"c{i % clusters}",
            "instruction": "say 1",
            "graders": [{"type": "answer_match", "expected": "1"}],
            "solution": {"answer": "1"},
        }
        for i in range(n)
    ]
