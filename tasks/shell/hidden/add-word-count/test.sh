#!/bin/bash
# Hidden tests for shell/add-word-count: one "PASS name" / "FAIL name" line per test.
python3 -B - <<'PY'
import sys
sys.path.insert(0, "app")
import textutil
try:
    assert textutil.slugify("Hello, World!") == "hello-world"
    print("PASS test_slugify")
except Exception:
    print("FAIL test_slugify")
try:
    assert textutil.word_count("one two  three\nfour") == 4
    assert textutil.word_count("") == 0
    print("PASS test_word_count")
except Exception:
    print("FAIL test_word_count")
PY
