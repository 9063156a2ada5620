"""What every part reads and writes with: fixture-rooted reads, safe inputs and outputs, sha256."""
