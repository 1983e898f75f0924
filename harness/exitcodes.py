"""Exit codes a CI job can trust. Listed in docs/exit-codes.md."""

OK = 0  # every trial has a verdict (passed or failed)
INTERNAL = 1  # a bug of ours (uncaught exception); please report it
BAD_CONFIG = 2  # a suite, task or environment file is invalid, or a bad command line
UNRESOLVED = 3  # the run finished but some trials have no verdict (infra/grader/harness errors)
INTERRUPTED = 4  # stopped by SIGINT/SIGTERM; resumable with `harness run --resume RUN_ID`
ENVIRONMENT = 5  # the run could not start: Docker unavailable, image build failed, lock mismatch
VALIDATION_FAILED = 6  # `harness validate`: a broken task, a mutant false pass or no verdict
NOT_COMPARABLE = 7  # `harness compare`: the two sides differ in tasks, graders, images, budgets
# `harness gate RUN`: one code per verdict. "May ship" is 0 (improvement) or 10 (non-inferior).
GATE_IMPROVEMENT = 0  # improvement rule met: the candidate is shown better
GATE_NON_INFERIOR = 10  # non-inferiority shown: the loss is within the margin (not a gain)
GATE_INCONCLUSIVE = 11  # the evidence allows neither claim: keep the baseline, get evidence
GATE_REGRESSION = 12  # the candidate is shown worse (beyond the margin): block
GATE_NO_VERDICT = 13  # too many trials without a verdict (or a must-never check unverified)
GATE_MUST_NEVER = 14  # a must-never class failed: block, whatever the statistics say
