#!/bin/bash
# Hidden tests for shell/add-word-count: one "<nonce> PASS name" / "<nonce> FAIL name" line per test.
python3 -B - <<'PY'
import os
N = os.environ.pop("HARNESS_RESULT_NONCE", "")  # before the code under test loads
import sys
sys.path.insert(0, "app")
import textutil
try:
    assert textutil.slugify("Hello, World!") == "hello-world"
    print(f"{N} PASS test_slugify")
except Exception:
    print(f"{N} FAIL test_slugify")
try:
    assert textutil.word_count("one two  three\nfour") == 4
    assert textutil.word_count("") == 0
    print(f"{N} PASS test_word_count")
except Exception:
    print(f"{N} FAIL test_word_count")
PY
