"""The small project the recorded sessions work on: a shop's order arithmetic in a few Python
modules with tests, in git, with a bug or a type error for each session to meet.

``cart.order_total`` keeps the subtotal when the discount exceeds it (fixed in one worktree, met
again in another); ``discount.percent_off`` floors where its tests want half up (the first fix,
``round``, rounds half to even); ``tax.rate`` returns an optional float (mypy --strict);
``inventory.reserve`` should raise ``OutOfStock``, which nothing defines (left red); and the
rates test times out on its first run after a clean checkout (a flaky test: rerun, it passes).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT = ["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "-c", "init.defaultBranch=main"]

CART_BUG = "return subtotal - discount_cents if subtotal > discount_cents else subtotal"
CART_FIX = "return subtotal - discount_cents if subtotal > discount_cents else 0"
DISCOUNT_BUG = "return total_cents * percent // 100"
DISCOUNT_TRY = "return round(total_cents * percent / 100)"
DISCOUNT_FIX = "return (total_cents * percent + 50) // 100"
TAX_BUG = "return RATES.get(region)"
TAX_FIX = "return RATES.get(region, 0.0)"
INVENTORY_BUG = "    stock[sku] -= quantity\n"
INVENTORY_TRY = (
    "    if stock.get(sku, 0) < quantity:\n"
    '        raise ValueError(f"only {stock.get(sku, 0)} of {sku} left")\n'
    "    stock[sku] -= quantity\n"
)
RATES_MARKER = ".rates-warm"

FILES = {
    ".gitignore": f"__pycache__/\n.mypy_cache/\n{RATES_MARKER}\n",
    "pyproject.toml": (
        '[project]\nname = "shop"\nversion = "0.1.0"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
    ),
    "shop/__init__.py": '"""Order arithmetic for the shop: carts, discounts, tax, stock."""\n',
    "shop/cart.py": (
        '"""Order totals, in cents."""\n\n\n'
        "def line_total(price_cents: int, quantity: int) -> int:\n"
        "    return price_cents * quantity\n\n\n"
        "def order_total(lines: list[tuple[int, int]], discount_cents: int = 0) -> int:\n"
        '    """The total of (price, quantity) lines less a discount, never below zero."""\n'
        "    subtotal = sum(line_total(price, quantity) for price, quantity in lines)\n"
        f"    {CART_BUG}\n"
    ),
    "shop/discount.py": (
        '"""Percentage discounts."""\n\n\n'
        "def percent_off(total_cents: int, percent: int) -> int:\n"
        '    """The discount on a total, in whole cents, rounded half up."""\n'
        f"    {DISCOUNT_BUG}\n"
    ),
    "shop/tax.py": (
        '"""VAT rates by region."""\n\n'
        'RATES: dict[str, float] = {"DE": 0.19, "FR": 0.20, "NL": 0.21}\n\n\n'
        "def rate(region: str) -> float:\n"
        '    """The region\'s rate; regions without VAT pay none."""\n'
        f"    {TAX_BUG}\n\n\n"
        "def with_tax(net_cents: int, region: str) -> int:\n"
        "    return round(net_cents * (1 + rate(region)))\n"
    ),
    "shop/inventory.py": (
        '"""Stock reservations."""\n\n\n'
        "def reserve(stock: dict[str, int], sku: str, quantity: int) -> dict[str, int]:\n"
        '    """Take ``quantity`` of ``sku`` out of ``stock``."""\n'
        f"{INVENTORY_BUG}"
        "    return stock\n"
    ),
    "shop/rates.py": (
        '"""Exchange rates, from a service that is slow to wake up."""\n\n'
        "from pathlib import Path\n\n"
        f'_WARM = Path(__file__).resolve().parent.parent / "{RATES_MARKER}"\n\n\n'
        "def fetch(currency: str) -> float:\n"
        "    if not _WARM.exists():  # the first call after a deploy times out\n"
        "        _WARM.touch()\n"
        '        raise TimeoutError("rates service did not answer within 2.0s")\n'
        '    return {"EUR": 1.0, "USD": 1.08, "GBP": 0.86}[currency]\n'
    ),
    "tests/test_cart.py": (
        "from shop.cart import order_total\n\n\n"
        "def test_total_of_lines() -> None:\n"
        "    assert order_total([(250, 2), (100, 3)]) == 800\n\n\n"
        "def test_discount_is_taken_off() -> None:\n"
        "    assert order_total([(500, 1)], discount_cents=150) == 350\n\n\n"
        "def test_discount_larger_than_the_order() -> None:\n"
        "    assert order_total([(500, 1)], discount_cents=700) == 0\n"
    ),
    "tests/test_discount.py": (
        "from shop.discount import percent_off\n\n\n"
        "def test_whole_cents() -> None:\n"
        "    assert percent_off(2000, 10) == 200\n\n\n"
        "def test_rounds_up_from_above_half() -> None:\n"
        "    assert percent_off(999, 15) == 150\n\n\n"
        "def test_rounds_half_up() -> None:\n"
        "    assert percent_off(5, 50) == 3\n"
    ),
    "tests/test_inventory.py": (
        "import pytest\n\n"
        "from shop import inventory\n\n\n"
        "def test_reserve_takes_stock() -> None:\n"
        '    assert inventory.reserve({"mug": 3}, "mug", 2) == {"mug": 1}\n\n\n'
        "def test_reserve_more_than_in_stock() -> None:\n"
        "    with pytest.raises(inventory.OutOfStock):\n"
        '        inventory.reserve({"mug": 1}, "mug", 2)\n'
    ),
    "tests/test_rates.py": (
        'from shop.rates import fetch\n\n\ndef test_usd_rate() -> None:\n    assert fetch("USD") == 1.08\n'
    ),
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout


def make_project(root: Path) -> dict[str, Path]:
    """The repository at ``root/shop`` (branch main) and two more worktrees of it made before
    anything is fixed: ``shop-b`` (branch feature) and ``shop-c`` (branch chore)."""
    main = root / "shop"
    for name, text in FILES.items():
        path = main / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(main, "init", "-q")
    git(main, "config", "user.name", "Dev")
    git(main, "config", "user.email", "dev@example.com")
    git(main, "add", ".")
    git(main, "commit", "-q", "-m", "Shop: carts, discounts, tax, stock, rates")
    trees = {"a": main}
    for key, branch in (("b", "feature"), ("c", "chore")):
        trees[key] = root / f"shop-{key}"
        git(main, "worktree", "add", "-q", "-b", branch, str(trees[key]))
    return trees
