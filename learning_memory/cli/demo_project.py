"""The small project ``learning-memory demo`` indexes and searches: written to a temporary folder
with a short git history, so the demo shows code and commit search wherever the package is
installed, and never indexes the installation itself."""

from __future__ import annotations

import subprocess
from pathlib import Path

NAME = "demo-shop"

# Each commit: its message, and the files it writes (path -> content).
COMMITS: list[tuple[str, dict[str, str]]] = [
    (
        "Add an HTTP client for the payment provider",
        {
            "shop/payments/client.py": '''"""Talks to the payment provider's HTTP API."""

import json
import urllib.request


class PaymentClient:
    def __init__(self, base_url: str, api_key: str) -> None:
        self.base_url = base_url
        self.api_key = api_key

    def charge(self, order_id: str, cents: int) -> dict:
        """Charge an order; the provider answers with the payment's id and state."""
        body = json.dumps({"order": order_id, "amount": cents}).encode()
        request = urllib.request.Request(
            f"{self.base_url}/charges", data=body, headers={"Authorization": self.api_key}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)
''',
            "shop/orders/model.py": '''"""Orders and their lines."""

from dataclasses import dataclass, field


@dataclass
class OrderLine:
    sku: str
    quantity: int
    unit_cents: int


@dataclass
class Order:
    id: str
    lines: list[OrderLine] = field(default_factory=list)

    def total_cents(self) -> int:
        """The order's total: each line's quantity times its unit price."""
        return sum(line.quantity * line.unit_cents for line in self.lines)
''',
        },
    ),
    (
        "Retry failed charges with exponential backoff and jitter",
        {
            "shop/payments/retry.py": '''"""How long to wait before trying a failed request again."""

import random


def backoff_delay(attempt: int, base_s: float = 0.5, cap_s: float = 30.0) -> float:
    """Exponential backoff with full jitter: a random wait up to base * 2**attempt, capped."""
    return random.uniform(0, min(cap_s, base_s * 2**attempt))


def should_retry(status: int) -> bool:
    """Server errors and rate limits are worth another try; client errors are not."""
    return status >= 500 or status == 429
''',
        },
    ),
    (
        "Cache product prices in memory for a minute",
        {
            "shop/catalog/prices.go": """package catalog

import (
\t"sync"
\t"time"
)

// PriceCache keeps each product's price for a while, so a page of products costs one lookup.
type PriceCache struct {
\tmu      sync.Mutex
\tttl     time.Duration
\tentries map[string]entry
}

type entry struct {
\tcents   int
\texpires time.Time
}

// Get returns a cached price, or false when it is missing or expired.
func (c *PriceCache) Get(sku string) (int, bool) {
\tc.mu.Lock()
\tdefer c.mu.Unlock()
\te, ok := c.entries[sku]
\tif !ok || time.Now().After(e.expires) {
\t\treturn 0, false
\t}
\treturn e.cents, true
}
""",
        },
    ),
    (
        "Check stock before accepting an order",
        {
            "shop/orders/stock.ts": """// Stock levels, read before an order is accepted.

export interface StockLevel {
  sku: string;
  available: number;
}

/** The lines of an order that ask for more than is in stock. */
export function shortLines(lines: { sku: string; quantity: number }[], stock: StockLevel[]) {
  const levels = new Map(stock.map((s) => [s.sku, s.available]));
  return lines.filter((line) => (levels.get(line.sku) ?? 0) < line.quantity);
}
""",
        },
    ),
]


def write(root: Path) -> Path:
    """Write the project under ``root`` as a git repository with its history; return its folder."""
    project = root / NAME
    project.mkdir(parents=True)

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)

    git("init", "-q")
    for message, files in COMMITS:
        for relative, content in files.items():
            path = project / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
        git("add", "-A")
        identity = ("-c", "user.name=Demo", "-c", "user.email=demo@example.com", "-c", "commit.gpgsign=false")
        git(*identity, "commit", "-q", "-m", message)
    return project
