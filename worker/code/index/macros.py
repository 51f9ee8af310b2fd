"""C and C++ macros that tree-sitter cannot read, blanked out before parsing.

A grammar sees the source before the preprocessor does, so a macro standing for syntax throws it:
a library's ``LIB_BEGIN_NAMESPACE`` (``namespace lib { inline namespace v2 {``) alone on its line
turns the whole header into one function named ``namespace``, and ``LIB_EXPORT template <...>``
hides the template behind it. Such macros are replaced by spaces of the same length, so every
byte offset and line stays where it was: units take their text from the original source.

Only shapes that are macro uses for certain are blanked: an upper-case identifier alone on its
line (an enumerator would carry a comma, or end a list that is still read), one in front of a
declaration keyword (in C++, in front of any declaration), and one between ``if`` and its
condition.
"""

from __future__ import annotations

import re

_ALONE = re.compile(rb"^[ \t]*([A-Z][A-Z0-9_]{2,})[ \t]*;?[ \t]*$", re.MULTILINE)
_BEFORE_DECLARATION = re.compile(
    rb"^[ \t]*([A-Z][A-Z0-9_]{2,})[ \t]+(?=(?:template|class|struct|union|enum|namespace|inline|typedef)\b)",
    re.MULTILINE,
)
# C++ only (C code names types in capitals: HANDLE, DWORD): a capitalised macro in front of a
# declaration, such as LIB_CONSTEXPR before a constructor, whose initialiser list then fails.
_BEFORE_NAME = re.compile(rb"^[ \t]*((?:[A-Z][A-Z0-9_]{2,}[ \t]+)+)(?=[A-Za-z_~])", re.MULTILINE)

# ``if LIB_CONSTEXPR20 (...)``: a macro standing for ``constexpr`` after an ``if``.
_AFTER_IF = re.compile(rb"\bif[ \t]+([A-Z][A-Z0-9_]{2,})(?=[ \t]*\()")


def blank_macros(data: bytes, *, cpp: bool) -> bytes:
    """``data`` with statement-like macro uses replaced by spaces (same length, same lines)."""
    out = bytearray(data)
    for pattern in (_ALONE, _BEFORE_NAME if cpp else _BEFORE_DECLARATION, _AFTER_IF):
        for match in pattern.finditer(data):
            start, end = match.span(1)
            out[start:end] = b" " * (end - start)
    return bytes(out)
