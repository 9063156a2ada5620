"""llama.cpp: Level Zero device allocations in its SYCL backend, and the allocation probe."""
