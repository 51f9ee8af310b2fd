"""Every Redis key and channel we own, in one place, under one namespace.

arq's own keys (:mod:`shared.arq_backend`) are global, but job ids carry the namespace, as
queue names do.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Queue(StrEnum):
    INTERACTIVE = "interactive"  # searches and single embeds: short, latency-bound
    BATCH = "batch"  # indexing, clustering, re-persistence: long, throughput-bound


@dataclass(frozen=True)
class Keys:
    namespace: str

    def queue(self, queue: Queue) -> str:
        return f"{self.namespace}:queue:{queue.value}"

    @property
    def queues(self) -> tuple[str, ...]:
        return tuple(self.queue(q) for q in Queue)

    @property
    def wake_channel(self) -> str:
        """Pub/sub channel an enqueue publishes the queue name on, so idle workers poll at once."""
        return f"{self.namespace}:wake"

    def job_id(self, chosen: str) -> str:
        """A caller-chosen (deterministic) job id, made unique to this namespace."""
        prefix = f"{self.namespace}."
        return chosen if chosen.startswith(prefix) else prefix + chosen

    def current(self, key: str) -> str:
        """The id of the job last started under a dedupe key (e.g. one project's indexing)."""
        return f"{self.namespace}:current:{key}"

    def done(self, job_id: str) -> str:
        """A list the worker pushes to when a job has its result: waiters BLPOP it."""
        return f"{self.namespace}:done:{job_id}"

    def progress(self, job_id: str) -> str:
        return f"{self.namespace}:progress:{job_id}"

    def worker(self, worker_id: str) -> str:
        """A worker's heartbeat (JSON identity, with a TTL)."""
        return f"{self.namespace}:worker:{worker_id}"

    @property
    def workers(self) -> str:
        """Set of worker ids that have started and not yet been reaped."""
        return f"{self.namespace}:workers"

    def running(self, worker_id: str) -> str:
        """Set of job ids a worker has started, so a crashed worker's jobs can be reclaimed."""
        return f"{self.namespace}:running:{worker_id}"

    @property
    def autostart_lock(self) -> str:
        return f"{self.namespace}:autostart-lock"

    def lock(self, kind: str, name: str) -> str:
        """A lease on one project's (``code``) or repository's (``git``) index, held by one worker."""
        return f"{self.namespace}:lock:{kind}:{name}"

    def leases(self, worker_id: str) -> str:
        """Set of the lock keys a worker holds, so that its leases go when it is found dead."""
        return f"{self.namespace}:leases:{worker_id}"

    def code_meta(self, project: str) -> str:
        """A shared project's record: its version (moved by every write), root and recursion."""
        return f"{self.namespace}:code-index:{project}:meta"

    def code_files(self, project: str) -> str:
        """A shared project's files: path -> its content hash and keyword rows."""
        return f"{self.namespace}:code-index:{project}:files"

    def commit_watermark(self, repo: str) -> str:
        """A repository's commit watermark, with shared state: last indexed HEAD, oldest date."""
        return f"{self.namespace}:commit-watermark:{repo}"

    def code_changes(self, project: str) -> str:
        """A shared project's files, each scored by the record version that last changed it."""
        return f"{self.namespace}:code-index:{project}:changes"

    @property
    def code_projects(self) -> str:
        """Set of the projects whose code index is shared."""
        return f"{self.namespace}:code-projects"

    def axis_version(self, axis: str) -> str:
        """A counter bumped whenever an axis's experiences change: clusterings are cached by it."""
        return f"{self.namespace}:axis-version:{axis}"

    def embedding(self, key: bytes) -> str:
        """One cached vector (float32 bytes) under its cache key, which names the model and text."""
        return f"{self.namespace}:embedding:{key.hex()}"

    @property
    def embeddings_used(self) -> str:
        """Sorted set of the cached vectors' keys (hex), each scored by when it was last used."""
        return f"{self.namespace}:embeddings-used"

    @property
    def sessions(self) -> str:
        """Sorted set of live sessions (servers), each scored by when it lapses unless renewed."""
        return f"{self.namespace}:sessions"
