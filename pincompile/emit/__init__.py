"""What a compile puts out: canonical serialization and the output folder (output), the
per-workload expand-serialize-write in worker processes (parallel), and the object-by-object
comparison of two compiles (compare)."""
