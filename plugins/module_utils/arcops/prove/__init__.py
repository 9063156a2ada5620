"""Proving a box serves: the correctness gate, and (to come) benchmarks and start-log reading."""
