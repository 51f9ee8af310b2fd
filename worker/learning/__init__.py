"""Learning: clustering experiences per axis and checking values against clusters."""
