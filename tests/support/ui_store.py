"""A populated store for the web view's tests: the sample experiences (real clusters), a value
validated against one of them, memories and a GHAP journal, all written through the jobs the
tools use (the journal through its own files, as the server leaves them)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from learning_memory.cli.samples import demo_entries
from learning_memory.shared.contracts.experiences import PERSIST_EXPERIENCE, PersistExperienceRequest
from learning_memory.shared.contracts.learning import (
    GET_CLUSTER_MEMBERS,
    GET_CLUSTERS,
    STORE_VALUE,
    VALIDATE_VALUE,
    GetClusterMembersRequest,
    GetClustersRequest,
    StoreValueRequest,
    ValidateValueRequest,
)
from learning_memory.shared.contracts.memory import STORE_MEMORY, MemoryRecord, StoreMemoryRequest
from learning_memory.shared.jobs import JobSpec
from tests.learning_data import ghap_entry

Resp = TypeVar("Resp", bound=BaseModel)

MEMORIES = [
    (
        "Deploys go through fly.io with `fly deploy --strategy rolling`; never push to heroku.",
        "workflow",
        ["deploy"],
    ),
    ("The project uses uv, not pip, for every dependency change.", "preference", ["tooling"]),
    ("Integration tests need the Redis at 127.0.0.1:6379, database 14.", "fact", ["tests"]),
    ("Secrets live in 1Password under the 'platform' vault; never in .env files.", "fact", ["secrets"]),
    ("Migrations are written with alembic and reviewed by the data team before merging.", "workflow", []),
]


class Jobs(Protocol):
    async def run(self, spec: JobSpec[Any, Resp], request: BaseModel, *, budget_s: float) -> Resp: ...


@dataclass
class Store:
    memory_ids: list[str] = field(default_factory=list)
    experience_ids: list[str] = field(default_factory=list)
    value_id: str = ""
    value_cluster: str = ""
    value_text: str = ""


def _story(member: Any) -> str:
    return "\n".join(
        f"{part.capitalize()}: {getattr(member, part)}"
        for part in ("goal", "hypothesis", "action", "prediction")
    )[:500]


async def populate(jobs: Jobs, journal_dir: Path) -> Store:
    store = Store()
    archive = journal_dir / "archive"
    archive.mkdir(parents=True, exist_ok=True)
    for number, sample in enumerate(demo_entries()):
        # Ids as the journal makes them (UUIDs), so that expand_context finds them.
        entry = ghap_entry(sample, number)
        entry = entry.model_copy(update={"id": str(uuid.uuid5(uuid.NAMESPACE_URL, entry.id))})
        await jobs.run(PERSIST_EXPERIENCE, PersistExperienceRequest(entry=entry), budget_s=120)
        (archive / f"{entry.id}.json").write_text(entry.model_dump_json())
        store.experience_ids.append(entry.id)
    for content, category, tags in MEMORIES:
        memory = MemoryRecord(
            id=str(uuid.uuid4()),
            content=content,
            category=category,
            importance=0.6,
            tags=tags,
            created_at=datetime.now(UTC),
        )
        await jobs.run(STORE_MEMORY, StoreMemoryRequest(memory=memory), budget_s=60)
        store.memory_ids.append(memory.id)
    # A value in a cluster's own words: its most typical stories, the first that validates.
    clusters = await jobs.run(GET_CLUSTERS, GetClustersRequest(axis="full"), budget_s=120)
    for cluster in clusters.clusters:
        members = await jobs.run(
            GET_CLUSTER_MEMBERS,
            GetClusterMembersRequest(axis="full", label=cluster.label, limit=3),
            budget_s=60,
        )
        for member in members.members:
            text = _story(member)
            checked = await jobs.run(
                VALIDATE_VALUE, ValidateValueRequest(text=text, axis="full", label=cluster.label), budget_s=60
            )
            if checked.valid:
                value = await jobs.run(
                    STORE_VALUE,
                    StoreValueRequest(
                        id=str(uuid.uuid4()),
                        text=text,
                        axis="full",
                        label=cluster.label,
                        created_at=datetime.now(UTC),
                    ),
                    budget_s=60,
                )
                store.value_id, store.value_cluster, store.value_text = value.id, value.cluster_id, value.text
                return store
    raise AssertionError("no sample story validates against its own cluster")
