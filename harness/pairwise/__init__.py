"""Pairwise judging of a finished run: a judge model compares two arms' outputs for the same
task and trial seed, each pair twice with the order swapped (``harness pairwise RUN``)."""
