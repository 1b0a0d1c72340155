"""The one place that knows a ``log_dir``: its paths, its lock, the rules for a new or resumed run, atomic writes,
and noticing each new checkpoint."""
