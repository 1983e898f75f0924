#!/usr/bin/env bash
# Hidden test: present for the grader only, after the agent has finished.
echo "$HARNESS_RESULT_NONCE PASS hidden_present"
