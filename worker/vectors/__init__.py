"""Vector stores: one interface, two engines (Qdrant Edge embedded, Qdrant server)."""
