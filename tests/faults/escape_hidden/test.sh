#!/usr/bin/env bash
# Hidden test: present for the grader only, after the agent has finished.
echo "PASS hidden_present"
