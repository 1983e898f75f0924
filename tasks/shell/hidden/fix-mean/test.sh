#!/bin/bash
# Hidden tests for shell/fix-mean: one "<nonce> PASS name" / "<nonce> FAIL name" line per test.
python3 -B "$HIDDEN_DIR/test_calc.py"
