#!/bin/bash
# Hidden tests for shell/fix-mean (see test_calc.py): an isolated interpreter, by absolute path.
exec /usr/bin/python3 -I "$HIDDEN_DIR/test_calc.py"
