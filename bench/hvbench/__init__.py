"""Helpers of scripts/bench.sh (bench/bench.py): runs, parsing, accuracy, statistics, markdown."""
