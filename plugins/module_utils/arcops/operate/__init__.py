"""Operating a box after deployment: its state as metrics, and a diagnostics bundle."""
