"""sqlmem benchmarks: every workload measured beside raw apsw SQL in the same run.

See docs/guide/benchmarks.md. Run with `python -m benchmarks` from the repository root.
"""
