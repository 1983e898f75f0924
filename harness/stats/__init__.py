"""Pure statistics for agent evaluation: estimators, intervals, comparisons, design.

Plain functions over numpy arrays; no I/O, no global state, randomness passed in as
``rng`` (a ``numpy.random.Generator``, an int seed or None). scipy is imported lazily
inside the functions that need it, so importing this package costs only numpy.
Each docstring names its estimand, the source its formula comes from (by the short names of
docs/statistics.md, which states every estimator, its formula and its reference once) and
its assumptions.
"""

from harness.stats.aggregate import (
    TaskCounts,
    cluster_sizes,
    macro_average,
    per_task_counts,
    per_task_rates,
    task_clusters,
)
from harness.stats.bayes import posterior_interval, posterior_prob_above
from harness.stats.betabinom import (
    PassKPrediction,
    beta_binomial_loglik,
    beta_from_mean_concentration,
    beta_pass_at_k,
    beta_pass_hat_k,
    fit_beta_binomial,
    predict_pass_hat_k,
)
from harness.stats.bootstrap import (
    BootstrapResult,
    PairedBootstrapResult,
    bca_interval,
    bootstrap_ratio_replicates,
    cluster_bootstrap_ci,
    cluster_resample_counts,
    paired_cluster_bootstrap,
    percentile_interval,
)
from harness.stats.classification import (
    Classification,
    Confusion,
    classification_metrics,
    confusion,
    f_beta,
    trial_predictions,
)
from harness.stats.clustered import (
    MeanInterval,
    clustered_se,
    design_effect,
    effective_clusters,
    effective_clusters_from_sizes,
    effective_sample_size,
    mean_ci_clustered,
)
from harness.stats.cost import (
    beta_retry_success,
    budget_matched_retry,
    mixture,
    pareto_front,
    retry_success,
    upper_convex_hull,
)
from harness.stats.decision import improvement_verdict, noninferiority_verdict
from harness.stats.estimate import (
    FEW_CLUSTERS,
    Estimate,
    mean_estimate,
    no_variation_interval,
    paired_estimate,
)
from harness.stats.gate_rule import GateRule
from harness.stats.infra import RerunTrap, rerun_trap
from harness.stats.intervals import (
    quantile_interval,
    wald_interval,
    wilson_half_width,
    wilson_interval,
    wilson_sample_size,
)
from harness.stats.multiple import benjamini_hochberg, familywise_error_rate, holm_adjust
from harness.stats.paired import (
    PairedDifference,
    discordant_counts,
    mcnemar_exact,
    paired_difference,
    sign_test,
    two_proportion_z_test,
    unpaired_difference,
)
from harness.stats.passk import (
    mean_pass_at_k,
    mean_pass_hat_k,
    pass_at_k,
    pass_hat_k,
    plugin_pass_at_k,
    plugin_pass_hat_k,
)
from harness.stats.plan_sim import (
    PilotModel,
    independent_tasks_power,
    simulated_mde,
    threshold_tasks_power,
)
from harness.stats.power import (
    cases_needed,
    cases_needed_paired,
    discordant_pairs_needed,
    minimum_detectable_effect,
    minimum_detectable_effect_paired,
    n_for_power,
    sign_test_power,
)
from harness.stats.reliability import (
    consistency,
    expected_calibration_error,
    harm_rate,
    robustness_drop,
    unstable_tasks,
)
from harness.stats.sequential import (
    alarm_threshold,
    confirmation,
    detector,
    drift_se,
    innovations,
    night_look,
)
from harness.stats.stratified import (
    finite_population_se,
    kish_effective_n,
    stratified_estimate,
    stratum_variance_shares,
)

__all__ = [
    "FEW_CLUSTERS",
    "Estimate",
    "mean_estimate",
    "paired_estimate",
    "GateRule",
    "quantile_interval",
    "no_variation_interval",
    "alarm_threshold",
    "confirmation",
    "detector",
    "drift_se",
    "innovations",
    "night_look",
    "PilotModel",
    "independent_tasks_power",
    "simulated_mde",
    "threshold_tasks_power",
    "BootstrapResult",
    "Classification",
    "Confusion",
    "classification_metrics",
    "confusion",
    "f_beta",
    "trial_predictions",
    "MeanInterval",
    "PairedBootstrapResult",
    "PairedDifference",
    "PassKPrediction",
    "RerunTrap",
    "TaskCounts",
    "bca_interval",
    "benjamini_hochberg",
    "beta_binomial_loglik",
    "beta_from_mean_concentration",
    "beta_pass_at_k",
    "beta_pass_hat_k",
    "beta_retry_success",
    "bootstrap_ratio_replicates",
    "budget_matched_retry",
    "cases_needed",
    "cases_needed_paired",
    "cluster_bootstrap_ci",
    "cluster_resample_counts",
    "cluster_sizes",
    "clustered_se",
    "consistency",
    "design_effect",
    "discordant_counts",
    "discordant_pairs_needed",
    "effective_clusters",
    "effective_clusters_from_sizes",
    "effective_sample_size",
    "expected_calibration_error",
    "familywise_error_rate",
    "finite_population_se",
    "fit_beta_binomial",
    "harm_rate",
    "holm_adjust",
    "improvement_verdict",
    "kish_effective_n",
    "macro_average",
    "mcnemar_exact",
    "mean_ci_clustered",
    "mean_pass_at_k",
    "mean_pass_hat_k",
    "minimum_detectable_effect",
    "minimum_detectable_effect_paired",
    "mixture",
    "n_for_power",
    "noninferiority_verdict",
    "paired_cluster_bootstrap",
    "paired_difference",
    "pareto_front",
    "pass_at_k",
    "pass_hat_k",
    "per_task_counts",
    "per_task_rates",
    "percentile_interval",
    "plugin_pass_at_k",
    "plugin_pass_hat_k",
    "posterior_interval",
    "posterior_prob_above",
    "predict_pass_hat_k",
    "rerun_trap",
    "retry_success",
    "robustness_drop",
    "sign_test",
    "sign_test_power",
    "stratified_estimate",
    "stratum_variance_shares",
    "task_clusters",
    "two_proportion_z_test",
    "unpaired_difference",
    "unstable_tasks",
    "upper_convex_hull",
    "wald_interval",
    "wilson_half_width",
    "wilson_interval",
    "wilson_sample_size",
]
