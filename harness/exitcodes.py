"""Exit codes a CI job can trust. Listed in the README."""

OK = 0  # every trial has a verdict (passed or failed)
INTERNAL = 1  # a bug of ours (uncaught exception); please report it
BAD_CONFIG = 2  # a suite, task or environment file is invalid, or a bad command line
UNRESOLVED = 3  # the run finished but some trials have no verdict (infra/grader/harness errors)
INTERRUPTED = 4  # stopped by SIGINT/SIGTERM; resumable with `harness run --resume RUN_ID`
ENVIRONMENT = 5  # the run could not start: Docker unavailable, image build failed, lock mismatch
VALIDATION_FAILED = 6  # `harness validate`: a broken task, a mutant false pass or no verdict
