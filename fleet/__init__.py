"""fleet: converge a small, mixed fleet of GPU hosts over SSH and record what each one is."""

__version__ = "0.1.0"
