"""Recall of memories, experiences and values: LoCoMo and our own labelled sets, hybrid against
BM25 alone, the dense side alone and plain fusion, in one run.

LoCoMo's ten conversations are stored one memory per turn, each conversation as a project, and
its questions (categories 1-4) asked of their conversation: recall@5, recall@10 and MRR of the
evidence turns per category. The data is fetched, never committed: ``--locomo`` points at it.
"""

from bench.recall.benchmark import add_arguments, run

__all__ = ["add_arguments", "run"]
