"""The memory root as a shared resource: one lock for every writer, read-only views for everyone else."""
