"""Refinement loops: quality-gated decisions, kept by the server in the state folder."""
