"""What every stage role shares: input checks, pinned files, records, seals, inventory variables."""
