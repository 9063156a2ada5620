"""Hypothesis settings and strategies the fuzz tests share."""

from datetime import timedelta

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Derandomized: CI and a developer see the same cases; failing seeds are kept as @example.
FUZZ = settings(
    max_examples=150,
    deadline=timedelta(seconds=2),
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# Any JSON document (records, locks, reports as read back from disk).
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
