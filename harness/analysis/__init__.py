"""The analysis core: what every view of a run computes, computed once.

A run's stored suite gives one ``Settings`` (confidence, cluster key, denominator, estimand)
and one ``Roles`` (baseline, candidate, A/A copy); the paired comparison of those arms, with
its class screens and the A/A noise floor, is ``paired_view``. ``harness report`` (terminal,
Markdown, JSON, HTML), ``compare``, ``gate``, ``history`` and ``plan`` read these; renderers
only format what they return.
"""

from harness.analysis.roles import run_roles
from harness.analysis.settings import Settings, settings_of

__all__ = ["Settings", "run_roles", "settings_of"]
