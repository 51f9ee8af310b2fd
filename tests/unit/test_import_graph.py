"""The import contracts of pyproject.toml hold on the whole graph, not on the part a tool happened
to find: ``server``, ``worker`` and ``shared`` are reached through links in ``learning_memory/``,
and a graph builder that stopped following them would pass every contract by seeing nothing."""

from __future__ import annotations

from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("learning_memory", cache_dir=None)


def _modules(folder: Path, prefix: str) -> set[str]:
    names = set()
    for path in folder.rglob("*.py"):
        parts = path.relative_to(folder).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.add(".".join((prefix, *parts)))
    return names


@pytest.mark.parametrize("package", ["server", "worker", "shared"])
def test_the_graph_holds_every_module_of_each_side(graph: grimp.ImportGraph, package: str) -> None:
    expected = _modules(ROOT / package, f"learning_memory.{package}")
    assert expected - graph.modules == set()


def test_the_server_and_the_worker_meet_only_in_shared(graph: grimp.ImportGraph) -> None:
    for one, other in (("server", "worker"), ("worker", "server")):
        chain = graph.find_shortest_chain(
            f"learning_memory.{one}", f"learning_memory.{other}", as_packages=True
        )
        assert chain is None, " -> ".join(chain or ())


def test_the_composition_root_wires_both(graph: grimp.ImportGraph) -> None:
    imported = graph.find_modules_that_directly_import("learning_memory.worker.in_process")
    assert imported == {"learning_memory.composition"}
    assert graph.direct_import_exists(
        importer="learning_memory.composition", imported="learning_memory.server.app"
    )
