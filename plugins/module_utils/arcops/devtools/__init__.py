"""The project's own tools: role pages from argument_specs, the no-op re-run benchmark."""
