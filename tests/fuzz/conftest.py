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
    "long",
    max_examples=1500,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=_QUIET,
)
#: The stateful test's (examples, steps per example) per profile (each step is a request, a
#: snapshot and a walk of the fork server's children: ~20-150 ms).
STATEFUL_BUDGET: dict[str, tuple[int, int]] = {"ci": (30, 25), "long": (60, 50)}
if "PEBREL_FUZZ_PROFILE" in os.environ or settings.get_current_profile_name() == "default":
    settings.load_profile(os.environ.get("PEBREL_FUZZ_PROFILE", "ci"))
