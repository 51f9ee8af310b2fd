"""What a query did not ask for, and the units it did not ask for lose.

Tests, examples, documentation and vendored or generated code answer a query only when it asks
for them (a question about documentation generation asks for the doc/ folder). Code for another
operating system than this one comes after this one's unless the query names one: the machine
this server runs on is the one its user works on. And a question rarely asks for a constructor.
"""

from __future__ import annotations

import re
import sys

from learning_memory.worker.code.index.units import UnitPayload
from learning_memory.worker.code.search.query import SEPARATORS, Query
from learning_memory.worker.code.search.ranking.weights import Weights

NON_CODE = re.compile(
    r"(^|/)[_.]?(tests?|testing|__tests__|spec|specs|examples?|samples?|demos?|docs?|benchmarks?|vendor|"
    r"third_party|generated|gen|mocks?|fixtures?)(/|$)|(^|/)(test_[^/]*|[^/]*_test\.\w+|[^/]*\.(test|spec)\.\w+|"
    r"[^/]*_spec\.\w+|conftest\.py)$",
    re.IGNORECASE,
)
# Code for one operating system: a folder (src/win beside src/unix) or a file suffix (*_windows.go).
_WINDOWS_CODE = re.compile(
    r"(^|/)(win|win32|win64|windows|mingw\w*)(/|$)|(^|/|_)(windows|win32)\.\w+$", re.IGNORECASE
)
_POSIX_CODE = re.compile(
    r"(^|/)(unix|posix|linux|darwin|macos|osx)(/|$)|(^|/|_)(unix|posix|linux|darwin)\.\w+$", re.IGNORECASE
)
OTHER_PLATFORM = _POSIX_CODE if sys.platform == "win32" else _WINDOWS_CODE
# Python, PHP, JavaScript/TypeScript, Swift, Ruby; Java, C#, C++ and Kotlin name it after the class.
_CONSTRUCTORS = frozenset({"__init__", "__construct", "constructor", "init", "initialize"})


def is_constructor(unit: UnitPayload) -> bool:
    if unit.unit_type != "method":
        return False
    owner = [part for part in SEPARATORS.split(unit.qualified_name) if part][-2:-1]
    return unit.name in _CONSTRUCTORS or owner == [unit.name]


def penalty(query: Query, unit: UnitPayload, weights: Weights) -> float:
    """What ``unit``'s relevance is multiplied by (1.0: nothing the query did not ask for)."""
    factor = 1.0
    if is_constructor(unit):
        factor *= weights.constructor_factor
    if not query.asks_platform and OTHER_PLATFORM.search(unit.file_path):
        factor *= weights.other_platform_factor
    if not query.asks_non_code and NON_CODE.search(unit.file_path):
        factor *= weights.non_code_factor
    return factor
