"""Runs /app/backup.sh on fresh directories with awkward names (pytest-style test
functions): spaces, a leading dash, a glob character, and files that must be left alone."""

import subprocess
import tempfile
from pathlib import Path

NAMES = ["plain.txt", "two words.txt", "-dash.txt", "star*.txt", "  spaced  .txt"]
OTHERS = ["notes.md", "archive.txt.gz"]


def run(src: Path, dest: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "/app/backup.sh", str(src), str(dest)],
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_copies_every_txt_file_and_counts_them():
    with tempfile.TemporaryDirectory() as tmp:
        src, dest = Path(tmp, "my files"), Path(tmp, "back up")
        src.mkdir()
        for i, name in enumerate(NAMES + OTHERS):
            (src / name).write_text(f"content {i}\n")
        done = run(src, dest)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == str(len(NAMES))
        assert sorted(p.name for p in dest.iterdir()) == sorted(NAMES)
        for i, name in enumerate(NAMES):
            assert (dest / name).read_text() == f"content {i}\n"


def test_an_empty_source_copies_nothing():
    with tempfile.TemporaryDirectory() as tmp:
        src, dest = Path(tmp, "empty"), Path(tmp, "out")
        src.mkdir()
        done = run(src, dest)
        assert done.returncode == 0 and done.stdout.strip() == "0", done
        assert dest.is_dir() and not any(dest.iterdir())
