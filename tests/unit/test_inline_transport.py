from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import pytest

from learning_memory.composition import in_process_executor
from learning_memory.server.transport import JobStillRunning
from learning_memory.server.transport.base import decode_envelope
from learning_memory.server.transport.inline import InlineTransport
from learning_memory.shared.arq_backend import Outcome
from learning_memory.shared.contracts.diagnostics import NOOP, PING, NoopResponse, PingRequest
from learning_memory.shared.errors import InternalError, JobTimeoutError, NotFoundError, ValidationError
from learning_memory.shared.jobs import JobProgress
from learning_memory.shared.settings import load_settings
from learning_memory.worker import registry
from learning_memory.worker.services import JobRun
from tests.helpers import start_job


@pytest.fixture
async def client() -> AsyncIterator[InlineTransport]:
    jobs = InlineTransport(load_settings(queue="inline"), in_process_executor)
    yield jobs
    await jobs.close()


async def test_ping_runs_in_process(client: InlineTransport) -> None:
    answer = await client.run(PING, PingRequest(), budget_s=5)
    assert answer.job_try == 1
    assert answer.worker.pid > 0
    status = await client.status(answer.job_id)
    assert status.state == "complete"
    assert status.result is not None and status.result["job_id"] == answer.job_id
    assert (await client.worker_info())[0]["id"] == answer.worker.id


async def test_progress_is_relayed(client: InlineTransport) -> None:
    seen: list[JobProgress] = []

    async def on_progress(progress: JobProgress) -> None:
        seen.append(progress)

    await client.run(PING, PingRequest(delay_ms=300), budget_s=5, on_progress=on_progress)
    assert seen and seen[-1].current == seen[-1].total


async def test_wait_budget_gives_the_job_id_and_status_follows(client: InlineTransport) -> None:
    request = PingRequest(delay_ms=400)
    job_id = await start_job(client, PING, request)
    assert await start_job(client, PING, request, job_id=job_id) == job_id  # joined, not run again
    with pytest.raises(JobStillRunning) as raised:
        await client.run(PING, request, budget_s=0.01, job_id=job_id)
    assert raised.value.job_id == job_id
    assert (await client.status(job_id)).state == "in_progress"
    answer = await client.run(PING, request, budget_s=5, job_id=job_id)
    assert answer.job_id == job_id and answer.job_try == 1
    assert (await client.status("unknown")).state == "not_found"


async def test_a_job_crashing_on_every_try_is_an_internal_error(
    client: InlineTransport, monkeypatch: pytest.MonkeyPatch
) -> None:
    impls = registry.implementations()
    tries: list[int] = []

    async def crash(run: JobRun, request: object) -> NoopResponse:
        tries.append(run.job_try)
        raise RuntimeError("boom")

    monkeypatch.setitem(registry._IMPLEMENTATIONS, NOOP.name, crash)
    monkeypatch.setattr("learning_memory.server.transport.inline.RETRY_DEFER_S", 0.01)
    job_id = await start_job(client, NOOP, NOOP.request())
    with pytest.raises(InternalError, match=f"every try \\({NOOP.max_tries}\\)"):
        await client.run(NOOP, NOOP.request(), budget_s=5, job_id=job_id)
    assert tries == list(range(1, NOOP.max_tries + 1))  # as many tries as the worker gives it
    status = await client.status(job_id)
    assert status.state == "failed" and status.error is not None
    assert status.error["type"] == "internal_error" and status.tries == NOOP.max_tries
    assert impls  # the registry itself is untouched after monkeypatch undo


async def test_a_try_that_crashes_is_run_again(
    client: InlineTransport, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def flaky(run: JobRun, request: object) -> NoopResponse:
        if run.job_try == 1:
            raise OSError("disk hiccup")
        return NoopResponse()

    monkeypatch.setitem(registry._IMPLEMENTATIONS, NOOP.name, flaky)
    monkeypatch.setattr("learning_memory.server.transport.inline.RETRY_DEFER_S", 0.01)
    job_id = await start_job(client, NOOP, NOOP.request())
    await client.run(NOOP, NOOP.request(), budget_s=5, job_id=job_id)
    assert (await client.status(job_id)).tries == 2


async def test_a_job_past_its_time_limit_is_a_timeout(
    client: InlineTransport, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def stuck(run: object, request: object) -> NoopResponse:
        await asyncio.Event().wait()
        raise AssertionError("never set")

    monkeypatch.setitem(registry._IMPLEMENTATIONS, NOOP.name, stuck)
    short = dataclasses.replace(NOOP, timeout_s=0.05)
    with pytest.raises(JobTimeoutError, match="time limit"):
        await client.run(short, NOOP.request(), budget_s=5)


async def test_domain_errors_are_results(client: InlineTransport, monkeypatch: pytest.MonkeyPatch) -> None:
    async def missing(run: object, request: object) -> NoopResponse:
        raise NotFoundError("nothing here")

    monkeypatch.setitem(registry._IMPLEMENTATIONS, NOOP.name, missing)
    job_id = await start_job(client, NOOP, NOOP.request())
    with pytest.raises(NotFoundError, match="nothing here"):
        await client.run(NOOP, NOOP.request(), budget_s=5, job_id=job_id)
    assert (await client.status(job_id)).error == {"type": "not_found", "message": "nothing here"}


async def test_finished_jobs_are_forgotten_oldest_first(
    client: InlineTransport, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("learning_memory.server.transport.inline.KEEP_FINISHED", 2)
    ids = [await start_job(client, NOOP, NOOP.request()) for _ in range(4)]
    await asyncio.gather(*(client.run(NOOP, NOOP.request(), budget_s=5, job_id=job_id) for job_id in ids))
    states = [(await client.status(job_id)).state for job_id in ids]
    assert states == ["not_found", "not_found", "complete", "complete"]


async def test_invalid_request_payload_is_a_validation_error() -> None:
    from learning_memory.worker.services import JobRun, WorkerServices

    run = JobRun(services=WorkerServices(load_settings()), job_id="j", job_try=1)
    envelope = await registry.execute(PING, {"delay_ms": -5}, run)
    with pytest.raises(ValidationError, match="delay_ms"):
        decode_envelope(PING, envelope)


def test_registering_twice_is_refused() -> None:
    with pytest.raises(RuntimeError, match="twice"):
        registry.job(NOOP)(registry.implementations()[NOOP.name])


async def test_dedupe_joins_the_running_job_then_starts_afresh(client: InlineTransport) -> None:
    request = PingRequest(delay_ms=200)
    first = await start_job(client, PING, request, dedupe_key="k")
    assert await start_job(client, PING, request, dedupe_key="k") == first
    await client.run(PING, request, budget_s=5, job_id=first)
    assert await start_job(client, PING, request, dedupe_key="k") != first  # that one has ended


def test_failed_outcomes_become_errors() -> None:
    timeout = Outcome(
        function="x", success=False, value={"__exception__": "TimeoutError", "message": ""}, tries=1
    )
    assert isinstance(timeout.error("x", 3), JobTimeoutError)
    spent = Outcome(function="x", success=False, value={"__exception__": "JobExecutionFailed"}, tries=4)
    assert "every try (3)" in spent.error("x", 3).message
    crashed = Outcome(function="x", success=False, value="unable to serialize result", tries=1)
    assert (
        isinstance(crashed.error("x", 3), InternalError) and "every try" not in crashed.error("x", 3).message
    )
