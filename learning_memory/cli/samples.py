"""A bundled sample set of realistic GHAP experiences in known themes (no model needed to read it).

Experiences are made by recombining the parts of a theme's stories (goal of one, hypothesis of
another, ...), so any number of distinct texts can be made, each labelled with its theme:
``make run`` resolves :func:`demo_entries` through the GHAP tools so that the learning tools
have real clusters to show, and the learning benchmark and tests check that clustering finds
the themes again.

A story is (goal, hypothesis, action, prediction, outcome); the outcome is ``("confirmed",
result, lesson)``, ``("falsified", result, surprise, root-cause category, root-cause
description, lesson)`` or ``("abandoned", result)``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from learning_memory.shared.contracts.experiences import (
    GhapEntry,
    Lesson,
    Resolution,
    RootCause,
    confidence_tier,
)

Story = tuple[str, str, str, str, tuple[str, ...]]


@dataclass(frozen=True)
class Theme:
    name: str
    domain: str
    strategies: tuple[str, ...]
    stories: tuple[Story, ...]


THEMES: tuple[Theme, ...] = (
    Theme(
        "flaky tests from shared state",
        "testing",
        ("check-assumptions", "divide-and-conquer", "systematic-elimination"),
        (
            (
                "Make the flaky test_checkout test pass reliably in CI",
                "Another test leaves rows in the shared database fixture",
                "Run test_checkout alone and then after the whole suite",
                "It passes alone and fails only after the suite",
                (
                    "confirmed",
                    "Fails only after test_refund, which leaves an order row behind",
                    "Give each test its own transaction rolled back at teardown",
                ),
            ),
            (
                "Stop test_user_signup failing one run in five",
                "A module-level cache keeps users created by earlier tests",
                "Clear the cache in an autouse fixture before every test",
                "Twenty runs in a row pass",
                (
                    "confirmed",
                    "Forty consecutive runs passed once the cache was cleared per test",
                    "Reset module-level caches between tests",
                ),
            ),
            (
                "Find why the integration tests fail when run in parallel with pytest-xdist",
                "Two workers write the same temporary file",
                "Use tmp_path instead of a fixed path in /tmp",
                "Parallel runs pass",
                (
                    "falsified",
                    "Still failing in parallel after switching to tmp_path",
                    "Both workers shared one Redis database, not a file",
                    "test-isolation",
                    "Tests on different workers shared one Redis database",
                    "Give every xdist worker its own Redis database number",
                ),
            ),
            (
                "Make the order-history test deterministic",
                "The test depends on the order other tests run in",
                "Run the suite with random ordering and a fixed seed",
                "The same seed reproduces the failure every time",
                (
                    "confirmed",
                    "Seed 4711 reproduces it: a previous test changes a global setting",
                    "Restore global settings in fixture teardown",
                ),
            ),
            (
                "Fix the test that fails only on the CI runner, never locally",
                "Leftover state from an earlier test in the same process",
                "Run the CI test order locally with the same test selection",
                "The failure appears locally too",
                (
                    "falsified",
                    "Passed locally in CI order",
                    "The CI runner reused a database that an earlier job had filled",
                    "test-isolation",
                    "The CI job reused a database left by an earlier job",
                    "Create a fresh database per CI job",
                ),
            ),
            (
                "Stop the email notification test from failing intermittently",
                "A mock patched in one test leaks into the next",
                "Replace manual patching with a fixture that undoes the patch",
                "The test passes in any order",
                (
                    "confirmed",
                    "Passes in any order once the mock is scoped to the test",
                    "Scope every patch to one test with a fixture",
                ),
            ),
        ),
    ),
    Theme(
        "slow database queries",
        "performance",
        ("root-cause-analysis", "research-first", "systematic-elimination"),
        (
            (
                "Speed up the dashboard query that takes eight seconds",
                "A missing index on orders.customer_id forces a sequential scan",
                "Run EXPLAIN ANALYZE on the query and add the index",
                "The query drops below 100 ms",
                (
                    "confirmed",
                    "Query time fell from 8 s to 40 ms with the index",
                    "Read the query plan before changing any code",
                ),
            ),
            (
                "Make the product listing endpoint respond in under 200 ms",
                "The ORM issues one query per product (N+1 queries)",
                "Count the SQL queries per request with the query logger",
                "Hundreds of queries for one page",
                (
                    "confirmed",
                    "312 queries per page; select_related brought it to 3",
                    "Log the number of queries per request to catch N+1 patterns",
                ),
            ),
            (
                "Find why the nightly report query got ten times slower",
                "The table grew and the index no longer fits in memory",
                "Compare the query plan on production data with last month's",
                "The plan shows disk reads on the index",
                (
                    "falsified",
                    "The index was fine; the plan switched to a sequential scan",
                    "Planner statistics were stale after a bulk import",
                    "missing-knowledge",
                    "Stale planner statistics after a bulk load",
                    "Run ANALYZE after bulk imports",
                ),
            ),
            (
                "Reduce the search page database time",
                "The LIKE filter with a leading wildcard cannot use the index",
                "Add a trigram index for the name column",
                "The search query uses the new index",
                (
                    "confirmed",
                    "Search went from 1.2 s to 30 ms with a trigram index",
                    "Check whether a filter can use an index at all",
                ),
            ),
            (
                "Speed up the slow invoice export query",
                "Sorting a large result without an index spills to disk",
                "Add a composite index on (account_id, created_at)",
                "The sort disappears from the query plan",
                (
                    "confirmed",
                    "The sort step vanished and the export query takes 90 ms",
                    "Index the columns you filter and sort on together",
                ),
            ),
            (
                "Find why the user lookup query is slow only for some accounts",
                "Large accounts hit a different query plan",
                "Run EXPLAIN on a large and a small account",
                "The plans differ",
                (
                    "falsified",
                    "Same plan for both accounts",
                    "The slow accounts had millions of soft-deleted rows that the index still held",
                    "misleading-symptom",
                    "Soft-deleted rows bloated the index for some accounts",
                    "Use a partial index that excludes soft-deleted rows",
                ),
            ),
        ),
    ),
    Theme(
        "dependency versions breaking the build",
        "configuration",
        ("read-the-error", "check-assumptions", "research-first"),
        (
            (
                "Fix the CI build that broke overnight without code changes",
                "A transitive dependency released a breaking version",
                "Diff the resolved dependency versions of the last green and the red build",
                "One package changed its major version",
                (
                    "confirmed",
                    "urllib3 moved from 1.x to 2.x through an unpinned transitive dependency",
                    "Pin dependencies with a lock file",
                ),
            ),
            (
                "Make the Docker image build again",
                "The base image tag now points to a newer Python version",
                "Pin the base image by digest",
                "The image builds as before",
                (
                    "confirmed",
                    "python:3 had moved to 3.13; pinning the digest fixed the build",
                    "Pin base images by digest, not by floating tag",
                ),
            ),
            (
                "Fix ImportError after upgrading the web framework",
                "A plugin is not compatible with the new framework version",
                "Read the full traceback and the plugin's changelog",
                "The changelog names the incompatible version",
                (
                    "confirmed",
                    "The plugin dropped support for the old API in its 4.0 release",
                    "Read the changelogs of dependencies before upgrading",
                ),
            ),
            (
                "Find why the build works locally but fails in CI",
                "CI installs different dependency versions than my machine",
                "Compare pip freeze output locally and in CI",
                "The versions differ",
                (
                    "falsified",
                    "Identical versions on both machines",
                    "CI used a different Python minor version where a wheel was missing",
                    "environment-issue",
                    "CI ran another Python version without a prebuilt wheel",
                    "Pin the Python version in CI as well as the packages",
                ),
            ),
            (
                "Unblock the deploy after npm install fails with a peer dependency error",
                "Two packages require incompatible versions of React",
                "Run npm ls react to see which packages pull which version",
                "Two versions of React in the tree",
                (
                    "confirmed",
                    "An old chart library required React 16",
                    "Check peer dependencies before upgrading a core library",
                ),
            ),
            (
                "Fix the type checker errors that appeared after a reinstall",
                "A new release of a type stubs package changed signatures",
                "Pin the stubs package to the previous version",
                "The errors disappear",
                (
                    "confirmed",
                    "types-requests had a new release; pinning it removed the errors",
                    "Lock type stub packages like any other dependency",
                ),
            ),
        ),
    ),
    Theme(
        "timezones and dates",
        "debugging",
        ("read-the-error", "systematic-elimination", "check-assumptions"),
        (
            (
                "Fix reports that show yesterday's orders for customers in Asia",
                "Dates are computed in UTC instead of the customer's timezone",
                "Convert timestamps to the customer's timezone before taking the date",
                "Orders appear on the right day",
                (
                    "confirmed",
                    "The report used naive UTC dates; converting per customer fixed it",
                    "Store UTC, convert to local time only when displaying or grouping by day",
                ),
            ),
            (
                "Find why the scheduled job ran twice on the night the clocks changed",
                "The scheduler uses local time and daylight saving repeats an hour",
                "Schedule the job in UTC",
                "The job runs once on the next clock change",
                (
                    "confirmed",
                    "The 02:30 local slot occurred twice during the DST change",
                    "Schedule jobs in UTC to avoid daylight saving repeats",
                ),
            ),
            (
                "Fix the test that fails every year on March 31st",
                "Adding one month to a date overflows at month end",
                "Use a date library that clamps to the last day of the month",
                "The test passes on any date",
                (
                    "confirmed",
                    "March 31 plus one month raised an invalid date error",
                    "Test date arithmetic at month and year boundaries",
                ),
            ),
            (
                "Find why subscription renewals are an hour late",
                "Server clocks drift",
                "Compare server time with an NTP source",
                "The clocks differ by an hour",
                (
                    "falsified",
                    "Clocks were in sync",
                    "A naive datetime was treated as local time by one service and as UTC by another",
                    "wrong-assumption",
                    "Naive datetimes were interpreted in two different timezones",
                    "Use timezone-aware datetimes everywhere",
                ),
            ),
            (
                "Fix the calendar export that shifts events by one day",
                "The export writes dates without a timezone",
                "Write event times with an explicit UTC offset",
                "Imported events keep their day",
                (
                    "confirmed",
                    "Adding the offset made every calendar show the right day",
                    "Always serialise times with an explicit offset",
                ),
            ),
            (
                "Find why the daily statistics are missing for one day in October",
                "The aggregation query groups by local date and the day had 25 hours",
                "Group by UTC date in the aggregation",
                "The missing day appears",
                (
                    "falsified",
                    "Grouping by UTC date still missed the day",
                    "The ETL job skipped the day because its cron ran before midnight UTC",
                    "timing-issue",
                    "The job ran before the day's data was complete in UTC",
                    "Run daily aggregation after the UTC day has closed",
                ),
            ),
        ),
    ),
    Theme(
        "memory leaks and unbounded caches",
        "performance",
        ("systematic-elimination", "divide-and-conquer", "root-cause-analysis"),
        (
            (
                "Find why the worker process memory grows until it is killed",
                "An in-process cache never evicts entries",
                "Take two heap snapshots an hour apart and compare them",
                "The cache dictionary dominates the growth",
                (
                    "confirmed",
                    "The lookup cache held 3 million entries after a day",
                    "Bound every cache with a maximum size and an eviction policy",
                ),
            ),
            (
                "Stop the API server from running out of memory under load",
                "Large responses are buffered completely in memory",
                "Stream responses instead of building them in memory",
                "Memory stays flat during large downloads",
                (
                    "confirmed",
                    "Streaming kept memory under 200 MB during 1 GB downloads",
                    "Stream large payloads instead of buffering them",
                ),
            ),
            (
                "Find the memory leak in the image thumbnail service",
                "Image objects are not closed after resizing",
                "Close every image explicitly with a context manager",
                "Memory stops growing",
                (
                    "falsified",
                    "Memory still grew with images closed",
                    "A global list of request logs kept every decoded image alive",
                    "oversight",
                    "A debugging list kept references to every request",
                    "Look for global collections that only ever grow",
                ),
            ),
            (
                "Reduce the memory of the nightly export job",
                "The export loads every row at once",
                "Fetch rows in batches of 1000 with a server-side cursor",
                "Memory stays flat during the export",
                (
                    "confirmed",
                    "Peak memory went from 6 GB to 150 MB with batching",
                    "Iterate large result sets in batches",
                ),
            ),
            (
                "Find why the long-running websocket server leaks memory",
                "Closed connections stay registered in the broadcast set",
                "Remove connections from the set in the disconnect handler",
                "The number of registered connections matches open sockets",
                (
                    "confirmed",
                    "Dead connections piled up in the set; removing them fixed the leak",
                    "Unregister listeners when connections close",
                ),
            ),
            (
                "Stop the memoised function from using gigabytes",
                "functools.lru_cache without maxsize grows forever with unique arguments",
                "Set maxsize on the cache and measure the hit rate",
                "Memory stays bounded with a good hit rate",
                (
                    "confirmed",
                    "maxsize=4096 kept memory bounded with a 92 percent hit rate",
                    "Never use an unbounded memoisation cache on unique inputs",
                ),
            ),
        ),
    ),
    Theme(
        "race conditions in concurrent code",
        "debugging",
        ("divide-and-conquer", "trial-and-error", "root-cause-analysis"),
        (
            (
                "Find why orders are sometimes charged twice",
                "Two workers process the same payment job concurrently",
                "Add a unique constraint on the payment idempotency key",
                "The second charge fails with a constraint error",
                (
                    "confirmed",
                    "Duplicate jobs were retried while the first was still running",
                    "Make payment handling idempotent with a unique key",
                ),
            ),
            (
                "Fix the counter that loses increments under load",
                "Read-modify-write on the counter is not atomic",
                "Replace the read and write with an atomic increment in the database",
                "The counter matches the number of requests",
                (
                    "confirmed",
                    "An UPDATE with counter = counter + 1 stopped the lost updates",
                    "Use atomic operations instead of read-modify-write",
                ),
            ),
            (
                "Find why the cache sometimes serves stale prices",
                "Two requests refill the cache in the wrong order",
                "Add a version number to cache entries and keep the newest",
                "Stale prices stop appearing",
                (
                    "falsified",
                    "Stale prices still appeared with versions",
                    "The invalidation message arrived before the database commit was visible",
                    "timing-issue",
                    "Cache invalidation ran before the transaction committed",
                    "Invalidate caches after the commit, not before",
                ),
            ),
            (
                "Stop the intermittent deadlock in the transfer service",
                "Two transactions lock the same accounts in opposite order",
                "Always lock accounts in ascending id order",
                "The deadlock disappears under the load test",
                (
                    "confirmed",
                    "Ordering the locks removed all deadlocks in a one hour load test",
                    "Acquire locks in a consistent global order",
                ),
            ),
            (
                "Find why the async task sometimes reads a half-initialised client",
                "The client is used before its connect coroutine finished",
                "Await an initialisation event before the first use",
                "The error stops appearing",
                (
                    "confirmed",
                    "Startup raced with the first request; awaiting the event fixed it",
                    "Guard lazy initialisation with a lock or an event",
                ),
            ),
            (
                "Fix the flaky file upload that loses chunks",
                "Chunks are written concurrently to the same file offset",
                "Write chunks sequentially in order",
                "Uploads are complete every time",
                (
                    "falsified",
                    "Sequential writes still lost chunks",
                    "The client retried chunks after a timeout and the server appended them twice",
                    "misleading-symptom",
                    "Retried chunks were appended instead of written at their offset",
                    "Write each chunk at its explicit offset so retries are harmless",
                ),
            ),
        ),
    ),
    Theme(
        "expired tokens and authentication",
        "security",
        ("read-the-error", "research-first", "check-assumptions"),
        (
            (
                "Fix users being logged out after exactly one hour",
                "The access token expires and the refresh token is never used",
                "Refresh the access token when the API answers 401",
                "Sessions last beyond one hour",
                (
                    "confirmed",
                    "The client ignored 401 responses; refreshing on 401 kept sessions alive",
                    "Handle token expiry by refreshing and retrying once",
                ),
            ),
            (
                "Find why the OAuth callback fails with invalid_grant",
                "The authorisation code is used twice",
                "Log every use of the authorisation code",
                "Two uses of the same code",
                (
                    "confirmed",
                    "The browser retried the callback and the code was exchanged twice",
                    "Exchange an authorisation code exactly once",
                ),
            ),
            (
                "Stop the service-to-service calls from failing with expired JWTs",
                "The cached token is used after its expiry time",
                "Refresh the cached token one minute before it expires",
                "No more expired-token errors",
                (
                    "confirmed",
                    "Refreshing early removed the expired-token errors",
                    "Refresh tokens before expiry, with a safety margin",
                ),
            ),
            (
                "Find why token validation fails on one server only",
                "That server has the wrong signing key",
                "Compare the configured public keys on all servers",
                "The keys differ",
                (
                    "falsified",
                    "All servers had the same keys",
                    "That server's clock was five minutes ahead, so tokens looked not yet valid",
                    "environment-issue",
                    "Clock skew made fresh tokens look issued in the future",
                    "Allow a small clock skew leeway when validating tokens",
                ),
            ),
            (
                "Fix the mobile app losing its session after the app is backgrounded",
                "The refresh token is stored only in memory",
                "Store the refresh token in the secure keychain",
                "Sessions survive backgrounding",
                (
                    "confirmed",
                    "Persisting the refresh token in the keychain kept users logged in",
                    "Persist refresh tokens in secure storage",
                ),
            ),
            (
                "Find why API keys stop working after rotation",
                "Old keys are revoked before clients pick up the new key",
                "Keep both old and new keys valid during a grace period",
                "No failed requests during rotation",
                (
                    "confirmed",
                    "A one-day overlap made key rotation invisible to clients",
                    "Rotate credentials with an overlap period",
                ),
            ),
        ),
    ),
    Theme(
        "rate limits of third-party APIs",
        "integration",
        ("research-first", "read-the-error", "trial-and-error"),
        (
            (
                "Stop the sync job from failing with HTTP 429 from the CRM API",
                "The job sends requests faster than the API's rate limit",
                "Throttle requests to the documented limit of ten per second",
                "No more 429 responses",
                (
                    "confirmed",
                    "Throttling to ten per second removed the 429 errors",
                    "Read the API's documented rate limits and throttle client-side",
                ),
            ),
            (
                "Make the payment provider webhook retries stop flooding us",
                "Our endpoint answers too slowly and the provider retries",
                "Acknowledge the webhook at once and process it in a background job",
                "Each webhook arrives once",
                (
                    "confirmed",
                    "Responding within 200 ms stopped the provider's retries",
                    "Acknowledge webhooks immediately and process asynchronously",
                ),
            ),
            (
                "Fix the import that stops after exactly 100 records",
                "The API paginates and we only read the first page",
                "Follow the next-page cursor until it is empty",
                "All records are imported",
                (
                    "confirmed",
                    "The API returned 100 records per page; following the cursor imported all",
                    "Always handle pagination of list endpoints",
                ),
            ),
            (
                "Find why retries make the rate limiting worse",
                "All clients retry at the same moment",
                "Add exponential backoff with jitter to retries",
                "Retries spread out and succeed",
                (
                    "confirmed",
                    "Jittered backoff turned retry storms into a steady trickle",
                    "Retry with exponential backoff and jitter",
                ),
            ),
            (
                "Fix the geocoding calls that fail randomly",
                "The API key hits its daily quota",
                "Check the quota usage in the provider dashboard",
                "The quota is exhausted",
                (
                    "falsified",
                    "The quota was at 20 percent",
                    "The provider limits requests per second per IP, and all our workers share one NAT IP",
                    "missing-knowledge",
                    "A per-IP rate limit applied to all workers behind one NAT address",
                    "Share one rate limiter across workers that use the same IP",
                ),
            ),
            (
                "Stop the email API from rejecting bulk sends",
                "We exceed the batch size the API accepts",
                "Split sends into batches of the documented maximum size",
                "Bulk sends are accepted",
                (
                    "confirmed",
                    "Batches of 500 recipients were all accepted",
                    "Respect documented batch size limits of external APIs",
                ),
            ),
        ),
    ),
)


def _resolve_arguments(outcome: tuple[str, ...], with_lesson: bool = True) -> dict[str, Any]:
    status, result = outcome[0], outcome[1]
    answer: dict[str, Any] = {"status": status, "result": result}
    if status == "falsified":
        _, _, surprise, category, description, lesson = outcome
        answer["surprise"] = surprise
        answer["root_cause"] = {"category": category, "description": description}
    elif status == "confirmed":
        lesson = outcome[2]
    else:
        return answer
    if with_lesson:
        answer["lesson"] = {"what_worked": lesson}
    return answer


@dataclass(frozen=True)
class SampleEntry:
    """One experience: the arguments of start_ghap and resolve_ghap, and its theme's index."""

    theme: int
    start: dict[str, Any]
    resolve: dict[str, Any]

    def resolved_entry(
        self, entry_id: str, session: str, created: datetime, *, orphaned: bool = False
    ) -> GhapEntry:
        """The resolved GHAP entry the journal would hand the persist job (tests and benchmarks
        store samples straight through the job, without a server)."""
        answer = self.resolve
        lesson = Lesson(**answer["lesson"]) if "lesson" in answer else None
        resolution = Resolution(
            status=answer["status"],
            result=answer["result"],
            surprise=answer.get("surprise"),
            root_cause=RootCause(**answer["root_cause"]) if "root_cause" in answer else None,
            lesson=lesson,
            confidence_tier=confidence_tier(answer["status"], lesson, orphaned),
            resolved_at=created + timedelta(minutes=20),
            resolved_in_session=session,
        )
        return GhapEntry(
            id=entry_id,
            session_id=session,
            created_at=created,
            updated_at=created,
            resolution=resolution,
            **self.start,
        )


def demo_entries() -> list[SampleEntry]:
    """What ``make run`` resolves: eight experiences per theme (64), enough for real clusters."""
    return generated_entries(8 * len(THEMES), seed=1)


def generated_entries(count: int, seed: int = 7) -> list[SampleEntry]:
    """``count`` experiences, each recombining the parts of its theme's stories (and numbered,
    so that no two texts are the same); themes take turns."""
    rng = random.Random(seed)
    entries = []
    for n in range(count):
        number = n % len(THEMES)
        theme = THEMES[number]
        parts = [rng.choice(theme.stories) for _ in range(5)]
        start = {
            "domain": theme.domain,
            "strategy": rng.choice(theme.strategies),
            "goal": f"{parts[0][0]} (ticket {1000 + n})",
            "hypothesis": parts[1][1],
            "action": parts[2][2],
            "prediction": parts[3][3],
        }
        entries.append(SampleEntry(number, start, _resolve_arguments(parts[4][4], rng.random() < 0.7)))
    return entries
