"""Benchmark of the gateway against a direct call and a plain reverse proxy (`make bench`).

Everything runs as real processes on 127.0.0.1; see bench/run.py for what is measured
and bench/targets.py for the targets the run is checked against.
"""
