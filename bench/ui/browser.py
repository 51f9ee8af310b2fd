"""Debian's chromium, headless, driven through its own chromedriver (selenium): nothing downloads a
browser or a driver. ``make browser`` installs both."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

T = TypeVar("T")

SCREENSHOTS = Path(__file__).resolve().parents[1] / "results" / "ui"


def browser_paths() -> tuple[str, str] | None:
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    return (chromium, driver) if chromium and driver else None


@contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[WebDriver]:
    paths = browser_paths()
    if paths is None:
        raise RuntimeError("chromium and chromedriver are missing: run `make browser`")
    options = webdriver.ChromeOptions()
    options.binary_location = paths[0]
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=paths[1]))
    try:
        yield driver
    finally:
        driver.quit()


def wait_until(driver: WebDriver, condition: Callable[[WebDriver], T], timeout: float = 30) -> T:
    """A condition met within a bound, never a sleep."""
    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(condition)


def screenshot(driver: WebDriver, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path
