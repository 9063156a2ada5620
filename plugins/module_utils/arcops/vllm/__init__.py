"""vLLM serving: the container spec, the Docker API, the start watchdog and its evidence."""
