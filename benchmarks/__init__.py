"""Benchmarks: ``make bench`` (``python -m benchmarks``). Figures are ratios measured in one run."""
