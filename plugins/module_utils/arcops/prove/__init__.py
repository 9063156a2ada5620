"""Proving a box serves: the correctness gate, the bench, the verify stage and what they watch."""
