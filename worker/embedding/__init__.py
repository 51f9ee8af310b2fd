"""Text embeddings: the model behind a small interface, with a cache so no text is embedded twice."""
