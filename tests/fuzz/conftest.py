"""Hypothesis profiles of the fuzz tests: `ci` (the default: a small, fixed budget, the same
examples every run) and `long` (many more, freshly drawn). Choose one with
`PEBREL_FUZZ_PROFILE=long` or `--hypothesis-profile long`."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=_QUIET,
)
settings.register_profile(
    "long", max_examples=1500, deadline=None, database=None, suppress_health_check=_QUIET
)
if "PEBREL_FUZZ_PROFILE" in os.environ or settings.get_current_profile_name() == "default":
    settings.load_profile(os.environ.get("PEBREL_FUZZ_PROFILE", "ci"))
