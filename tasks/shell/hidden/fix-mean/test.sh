#!/bin/bash
# Hidden tests for shell/fix-mean: one "PASS name" / "FAIL name" line per test.
python3 -B "$HIDDEN_DIR/test_calc.py"
