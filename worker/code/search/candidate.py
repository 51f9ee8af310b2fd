"""The unit a search is weighing: its point id, its relevance so far, and its typed payload."""

from __future__ import annotations

from dataclasses import dataclass

from learning_memory.shared.contracts.code import CodeHit
from learning_memory.worker.code.index.units import UnitPayload


@dataclass(frozen=True)
class Candidate:
    point_id: str
    # The fused relevance (1.0: first in every ranking asked), then what the reranking made of it.
    score: float
    unit: UnitPayload

    def hit(self, similarity: float | None) -> CodeHit:
        """The answer for this unit; ``similarity``: its cosine similarity to the query, if known."""
        # Cosine similarity is in [-1, 1] and a reranked relevance may exceed 1; the contract
        # promises [0, 1] for the score.
        return CodeHit(
            **self.unit.model_dump(exclude={"docstring"}),
            id=self.point_id,
            score=min(1.0, max(0.0, self.score)),
            similarity=similarity,
        )
