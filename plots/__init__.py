"""Figures from result files. Plots read runs, ledgers and sweeps; they never simulate."""
