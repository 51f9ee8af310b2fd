"""What :mod:`shared.arq_backend` relies on in arq, checked against the installed arq.

An arq release that renames a hook we override, changes the job or result format, or the way
tries are counted fails here, by name, rather than somewhere no test points at. The second half
runs arq's own worker loop (our :class:`QueueWorker`) on a real Redis, in-process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import AsyncIterator

import pytest
from arq import constants
from arq.jobs import deserialize_job_raw, serialize_result
from arq.worker import Worker
from redis.asyncio import Redis

from learning_memory.server.transport.arq import ArqTransport
from learning_memory.shared import arq_backend, codec
from learning_memory.shared.arq_backend import QueueWorker
from learning_memory.shared.contracts.diagnostics import NOOP, NoopResponse
from learning_memory.shared.errors import InternalError, JobTimeoutError
from learning_memory.shared.keys import Keys
from learning_memory.shared.settings import Settings
from learning_memory.worker import registry
from learning_memory.worker.arq_jobs import arq_function
from learning_memory.worker.services import JobRun


def test_the_hooks_we_override_exist_with_the_arguments_we_pass() -> None:
    def params(name: str) -> list[str]:
        return list(inspect.signature(getattr(Worker, name)).parameters)

    assert inspect.iscoroutinefunction(Worker._poll_iteration) and params("_poll_iteration") == ["self"]
    assert not inspect.iscoroutinefunction(Worker._release_sem_dec_counter_on_complete)
    assert params("_release_sem_dec_counter_on_complete") == ["self"]
    assert params("finish_job")[:4] == ["self", "job_id", "finish", "result_data"]
    assert params("finish_failed_job") == ["self", "job_id", "result_data"]
    worker_init = inspect.signature(Worker.__init__).parameters
    for name in (
        "handle_signals",
        "queue_name",
        "redis_pool",
        "ctx",
        "max_jobs",
        "poll_delay",
        "keep_result",
    ):
        assert name in worker_init, name


def test_keys_are_arqs_own() -> None:
    assert arq_backend.job_key("j") == constants.job_key_prefix + "j" == "arq:job:j"
    assert arq_backend.result_key("j") == "arq:result:j"
    assert arq_backend.in_progress_key("j") == "arq:in-progress:j"
    assert arq_backend.retry_key("j") == "arq:retry:j"


def test_a_job_we_encode_is_read_by_arqs_worker() -> None:
    raw = arq_backend.encode_job("ping", {"delay_ms": 5}, 1_700_000_000_000)
    function, args, kwargs, job_try, enqueued_ms = deserialize_job_raw(raw, deserializer=codec.loads)
    # JSON has no tuples: arq's worker calls the function with this list spread as arguments.
    assert (function, list(args), kwargs) == ("ping", [{"delay_ms": 5}], {})
    assert job_try is None  # arq types it as int, but a job not yet tried has none
    assert enqueued_ms == 1_700_000_000_000
    assert arq_backend.decode_job(raw).function == "ping"


def test_a_result_arqs_worker_writes_is_decoded() -> None:
    def written(success: bool, result: object, job_try: int) -> bytes:
        raw = serialize_result(
            "noop",
            ({},),
            {},
            job_try,
            1,
            success,
            result,
            2,
            3,
            "ref",
            "q",
            job_id="j",
            serializer=codec.dumps,
        )
        assert raw is not None  # arq answers None only when the result cannot be serialised
        return raw

    done = arq_backend.decode_result(written(True, {"ok": {}}, 1))
    assert done.success and done.value == {"ok": {}} and done.tries == 1 and done.function == "noop"
    timed_out = arq_backend.decode_result(written(False, TimeoutError(), 1))
    assert isinstance(timed_out.error("noop", 3), JobTimeoutError)
    assert arq_backend.decode_result(arq_backend.NO_RESULT).error("noop", 3).type == "internal_error"


@pytest.fixture
async def queue_worker(settings: Settings, redis: Redis) -> AsyncIterator[QueueWorker]:
    """Our queue worker in this process, serving the NOOP job, polling often for deferred tries."""
    keys = Keys(settings.namespace)
    registry.implementations()  # registered before a test replaces one of them
    worker = QueueWorker(
        [arq_function(NOOP), arq_function(dataclasses.replace(NOOP, name="short", timeout_s=0.2))],
        keys=keys,
        worker_id="contract",
        queue_name=keys.queue(NOOP.queue),
        redis_pool=arq_backend.connect(settings.redis_url),
        ctx={"redis": redis, "keys": keys, "services": None},
        poll_delay=0.05,
        job_serializer=codec.dumps,
        job_deserializer=codec.loads,
    )
    loop = asyncio.create_task(worker.main())
    yield worker
    loop.cancel()
    await worker.stop(1)
    await worker.pool.aclose()
    stale = [key async for key in redis.scan_iter(match=f"arq:*:{settings.namespace}.*", count=500)]
    if stale:
        await redis.delete(*stale)


@pytest.fixture
def transport_with_grace(settings: Settings) -> ArqTransport:
    # No heartbeat beats for the in-process worker: give the wait a grace that outlasts the test.
    return ArqTransport(settings.model_copy(update={"worker_start_grace_s": 120}))


@pytest.mark.redis
async def test_arq_runs_a_crashing_job_max_tries_times_then_reports_it(
    queue_worker: QueueWorker, transport_with_grace: ArqTransport, monkeypatch: pytest.MonkeyPatch
) -> None:
    tries: list[int] = []

    async def crash(run: JobRun, request: object) -> NoopResponse:
        tries.append(run.job_try)
        raise RuntimeError("boom")

    monkeypatch.setitem(registry._IMPLEMENTATIONS, NOOP.name, crash)
    monkeypatch.setattr("learning_memory.worker.arq_jobs.RETRY_DEFER_S", 0.01)
    try:
        with pytest.raises(InternalError, match=f"every try \\({NOOP.max_tries}\\)"):
            await transport_with_grace.run(NOOP, NOOP.request(), budget_s=30)
    finally:
        await transport_with_grace.close()
    assert tries == list(range(1, NOOP.max_tries + 1))


@pytest.mark.redis
async def test_arq_enforces_the_specs_time_limit(
    queue_worker: QueueWorker, transport_with_grace: ArqTransport, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def stuck(run: JobRun, request: object) -> NoopResponse:
        await asyncio.Event().wait()
        raise AssertionError("never set")

    monkeypatch.setitem(registry._IMPLEMENTATIONS, "short", stuck)
    short = dataclasses.replace(NOOP, name="short", timeout_s=0.2)
    try:
        with pytest.raises(JobTimeoutError, match="time limit"):
            await transport_with_grace.run(short, NOOP.request(), budget_s=30)
    finally:
        await transport_with_grace.close()
