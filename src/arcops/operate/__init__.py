"""Operating a box after deployment: its state as metrics."""
