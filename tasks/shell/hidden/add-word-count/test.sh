#!/bin/bash
# Hidden tests for shell/add-word-count (see test_textutil.py): an isolated interpreter.
exec /usr/bin/python3 -I "$HIDDEN_DIR/test_textutil.py"
