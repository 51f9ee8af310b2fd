from __future__ import annotations

import asyncio

import pytest

from server.jobclient import JobStillRunning, run_job
from server.jobclient.base import decode_envelope, failure_error
from server.jobclient.inline import InlineJobClient
from shared.contracts.diagnostics import NOOP, PING, NoopResponse, PingRequest
from shared.errors import InternalError, JobTimeoutError, NotFoundError, ValidationError
from shared.jobs import JobProgress
from shared.settings import load_settings
from worker import registry


@pytest.fixture
async def client() -> InlineJobClient:
    jobs = InlineJobClient(load_settings(queue="inline"))
    yield jobs  # type: ignore[misc]
    await jobs.close()


async def test_ping_runs_in_process(client: InlineJobClient) -> None:
    answer = await run_job(client, PING, PingRequest(), timeout_s=5)
    assert answer.job_try == 1
    assert answer.worker.pid > 0
    status = await client.status(answer.job_id)
    assert status.state == "complete"
    assert status.result is not None and status.result["job_id"] == answer.job_id
    assert (await client.worker_info())[0]["id"] == answer.worker.id


async def test_progress_is_relayed(client: InlineJobClient) -> None:
    seen: list[JobProgress] = []

    async def on_progress(progress: JobProgress) -> None:
        seen.append(progress)

    await run_job(client, PING, PingRequest(delay_ms=300), timeout_s=5, on_progress=on_progress)
    assert seen and seen[-1].current == seen[-1].total


async def test_wait_budget_gives_the_job_id_and_status_follows(client: InlineJobClient) -> None:
    job_id = await client.submit(PING, PingRequest(delay_ms=400))
    assert await client.submit(PING, PingRequest(delay_ms=400), job_id=job_id) == job_id  # idempotent
    with pytest.raises(JobStillRunning) as raised:
        await client.wait(PING, job_id, timeout_s=0.01)
    assert raised.value.job_id == job_id
    assert (await client.status(job_id)).state == "in_progress"
    answer = await client.wait(PING, job_id, timeout_s=5)
    assert answer.job_id == job_id
    assert (await client.status("unknown")).state == "not_found"


async def test_a_crashing_job_is_an_internal_error(
    client: InlineJobClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    impls = registry.implementations()

    async def crash(ctx: object, request: object) -> NoopResponse:
        raise RuntimeError("boom")

    monkeypatch.setitem(registry._IMPLEMENTATIONS, NOOP.name, crash)
    job_id = await client.submit(NOOP, NOOP.request())
    with pytest.raises(InternalError):
        await client.wait(NOOP, job_id, timeout_s=5)
    status = await client.status(job_id)
    assert status.state == "failed" and status.error is not None
    assert status.error["type"] == "internal_error"
    assert impls  # the registry itself is untouched after monkeypatch undo


async def test_domain_errors_are_results(client: InlineJobClient, monkeypatch: pytest.MonkeyPatch) -> None:
    async def missing(ctx: object, request: object) -> NoopResponse:
        raise NotFoundError("nothing here")

    monkeypatch.setitem(registry._IMPLEMENTATIONS, NOOP.name, missing)
    job_id = await client.submit(NOOP, NOOP.request())
    with pytest.raises(NotFoundError, match="nothing here"):
        await client.wait(NOOP, job_id, timeout_s=5)
    assert (await client.status(job_id)).error == {"type": "not_found", "message": "nothing here"}


async def test_finished_jobs_are_forgotten_oldest_first(
    client: InlineJobClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("server.jobclient.inline.KEEP_FINISHED", 2)
    ids = [await client.submit(NOOP, NOOP.request()) for _ in range(4)]
    await asyncio.gather(*(client.wait(NOOP, job_id, timeout_s=5) for job_id in ids))
    states = [(await client.status(job_id)).state for job_id in ids]
    assert states == ["not_found", "not_found", "complete", "complete"]


async def test_invalid_request_payload_is_a_validation_error() -> None:
    from worker.context import JobContext, WorkerServices

    ctx = JobContext(services=WorkerServices(load_settings()), job_id="j", job_try=1)
    envelope = await registry.execute(PING, {"delay_ms": -5}, ctx)
    with pytest.raises(ValidationError, match="delay_ms"):
        decode_envelope(PING, envelope)


def test_registering_twice_is_refused() -> None:
    with pytest.raises(RuntimeError, match="twice"):
        registry.job(NOOP)(registry.implementations()[NOOP.name])


def test_failure_errors() -> None:
    assert isinstance(
        failure_error("x", {"__exception__": "TimeoutError", "message": ""}, 1), JobTimeoutError
    )
    spent = failure_error(
        "x", {"__exception__": "JobExecutionFailed", "message": "max 3 retries exceeded"}, 4
    )
    assert isinstance(spent, InternalError) and "every try" in spent.message
    assert isinstance(failure_error("x", "unable to serialize result", 1), InternalError)
