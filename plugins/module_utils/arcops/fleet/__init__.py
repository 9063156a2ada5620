"""The fleet: stack releases, known stacks, waves, plans, rollouts and status (control node)."""
