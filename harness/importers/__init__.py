"""Importers: turn other benchmarks' task formats into harness environments and suites.

Each reads a user's checkout at a given path and writes plain files (environment.yaml, task
files, a suite); nothing of the third party's code or text is part of the harness itself.
"""
