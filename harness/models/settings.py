"""``${VAR}`` expansion of model settings lives with the config it reads (``harness.config.env``)."""

from harness.config.env import EXPANDED_FIELDS, expand_env

__all__ = ["EXPANDED_FIELDS", "expand_env"]
