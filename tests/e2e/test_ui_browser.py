"""The web view in a real browser (Debian's chromium through selenium), served by the real
``learning-memory ui`` process over a real worker and Redis, on a store populated through the
tools' jobs: every page loads, the cluster map leads to a cluster's members and its value, and
screenshots are kept under bench/results/ui/."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from bench.ui.browser import chromium, screenshot, wait_until
from bench.ui.process import view_process
from learning_memory.cli.client import result_payload
from learning_memory.server.transport.arq import ArqTransport
from tests.e2e.conftest import stdio_client
from tests.support.ui_store import Store, populate

pytestmark = [pytest.mark.slow, pytest.mark.redis]

PAGES = {
    "overview": "",
    "ghap": "ghap",
    "experiences": "experiences?q=tests+fail+only+in+CI&axis=full",
    "values": "values",
    "memories": "memories",
    "memory-search": "memories?q=how+should+I+ship+the+new+release+to+production",
    "audit": "audit",
    "code": "code",
    "changes": "changes",
}


def _no_error(driver: WebDriver) -> None:
    assert not driver.find_elements(By.CSS_SELECTOR, "p.error"), driver.find_element(By.TAG_NAME, "main").text
    assert "Traceback" not in driver.page_source


def _follow_the_map(driver: WebDriver, url: str, store: Store) -> None:
    driver.get(url + "clusters?axis=full")
    canvas = driver.find_element(By.ID, "cluster-map")
    wait_until(driver, lambda _: canvas.get_attribute("data-ready") == "1")
    assert int(canvas.get_attribute("data-points") or 0) >= 60
    # Hovering a point shows its goal.
    driver.execute_script(
        "const c = arguments[0]; const r = c.getBoundingClientRect();"
        "c.dispatchEvent(new MouseEvent('mousemove',"
        " {clientX: r.left + r.width / 2, clientY: r.top + r.height / 2}));",
        canvas,
    )
    # The cluster the value was validated against: its members, most typical first, and the value.
    driver.find_element(By.CSS_SELECTOR, f'a.cluster-link[data-cluster="{store.value_cluster}"]').click()
    detail = driver.find_element(By.ID, "cluster-detail")
    wait_until(driver, lambda _: len(detail.find_elements(By.CSS_SELECTOR, "ol.members li")) > 0)
    assert store.value_text.splitlines()[0].removeprefix("Goal: ") in detail.text
    screenshot(driver, "cluster-map")


def _gone(element: WebElement) -> Callable[[WebDriver], bool]:
    """Selenium's staleness_of, also for Chrome's other answer about a node of a page being
    replaced: "Node with given id does not belong to the document" instead of a stale element."""

    def check(_: WebDriver) -> bool:
        try:
            element.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as exc:
            if "does not belong to the document" in str(exc):
                return True
            raise
        return False

    return check


def _click_and_wait(driver: WebDriver, selector: str) -> str:
    """Click a curation button; the page it leads to says what was done."""
    button = driver.find_element(By.CSS_SELECTOR, selector)
    button.click()
    # The button's form posts and the browser loads the answer: until the old page is gone, the
    # notice found may be the one it showed (Undo sits on a page with a notice already).
    wait_until(driver, _gone(button))
    notice = wait_until(driver, lambda d: d.find_elements(By.CSS_SELECTOR, ".notice"))
    _no_error(driver)
    return str(notice[0].text)


async def _tool(env: dict[str, str], name: str, arguments: dict[str, Any]) -> Any:
    async with stdio_client(env) as client:
        return result_payload(await client.call_tool(name, arguments))


async def _curate(driver: WebDriver, url: str, store: Store, env: dict[str, str]) -> None:
    # Delete a memory: the tools no longer find it; Undo on the notice brings it back.
    target = store.memory_ids[0]
    driver.get(url + "memories")
    said = _click_and_wait(driver, f'article[data-id="{target}"] button.delete')
    assert "Deleted" in said or "deleted" in said
    screenshot(driver, "memory-deleted")
    listed = await _tool(env, "list_memories", {"limit": 200})
    assert target not in {m["id"] for m in listed["results"]}
    _click_and_wait(driver, "#undo")
    listed = await _tool(env, "list_memories", {"limit": 200})
    assert target in {m["id"] for m in listed["results"]}

    # Retire the value: list_values leaves it out; undone from the Changes page, it is back.
    driver.get(url + "values")
    _click_and_wait(driver, f'article[data-id="{store.value_id}"] button.retire')
    values = await _tool(env, "list_values", {})
    assert store.value_id not in {v["id"] for v in values["results"]}
    driver.get(url + "changes")
    screenshot(driver, "changes")
    _click_and_wait(driver, "table#changes button.undo")
    values = await _tool(env, "list_values", {})
    assert store.value_id in {v["id"] for v in values["results"]}


async def test_every_page_and_the_cluster_map_in_a_browser(
    lms_env: dict[str, str], live_worker: subprocess.Popen[bytes], arq_jobs: ArqTransport, tmp_path: Path
) -> None:
    store = await populate(arq_jobs, Path(lms_env["LMS_JOURNAL_DIR"]))
    with view_process(lms_env, tmp_path / "ui.log") as url, chromium() as driver:
        for name, path in PAGES.items():
            driver.get(url + path)
            _no_error(driver)
            screenshot(driver, name)
        driver.get(url + PAGES["memory-search"])
        assert "fly.io" in driver.find_element(By.TAG_NAME, "main").text
        driver.get(url + f"ghap/{store.experience_ids[-1]}")
        _no_error(driver)
        _follow_the_map(driver, url, store)
        driver.get(url + "values")
        screenshot(driver, "values")
        driver.find_element(By.LINK_TEXT, "the evidence").click()
        assert len(driver.find_elements(By.CSS_SELECTOR, "table#evidence tbody tr[data-id]")) >= 5
        screenshot(driver, "value-evidence")
        await _curate(driver, url, store, lms_env)
