"""tlsbench: a benchmark lab for TLS libraries."""

__version__ = "0.1.0"
