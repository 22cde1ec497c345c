"""sqlmem benchmarks: every workload measured beside raw apsw SQL in the same run.

See benchmarks/README.md. Run with `python -m benchmarks` from the repository root.
"""
