"""nbprof report: what a run's device memory did (see cli.py)."""
