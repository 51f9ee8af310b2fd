"""Refinement loops (seed 002): quality-gated decisions, kept by the server in the state folder."""
