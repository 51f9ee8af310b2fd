"""Reordering the fused candidates: boosts for what the query names, penalties for what it did not
ask for, and file-level rules, each weighed in :class:`~.weights.Weights`."""
