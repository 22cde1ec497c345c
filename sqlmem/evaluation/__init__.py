"""Measuring search on conversation benchmark files (`sqlmem recall`): reading LoCoMo-shaped
files (`conversations`) and evidence recall with latency per mode (`recall`)."""
