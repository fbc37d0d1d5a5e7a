"""Entry points: `tilec` and `tile-opt`."""
