"""Whether a ``.h`` header is C++: a cheap look at the head of its text, no parse.

A ``.h`` is C or C++ by convention only. Read with the C grammar, a C++ header loses its classes
and methods, and ``namespace x {`` comes out as a function named ``x``; read with the C++
grammar, a C header parses about as well as with the C grammar (C++ keeps almost all of C). So a
header is C++ as soon as one construct that C cannot have shows up outside comments and strings,
and C otherwise.

Code inside ``#ifdef __cplusplus`` (and the ``#else`` of ``#ifndef __cplusplus``) is left out:
C headers written to be included from C++ keep their C++ there (``extern "C" {`` guards,
``extern "C++"`` overloads, inline templates), and their language is still C.
"""

from __future__ import annotations

import re

# Where C++ constructs show up in a C++ header: after the licence comment and the includes.
SNIFF_BYTES = 32 * 1024

# Comments, string and character literals, and ``[[attr::name]]`` attributes (C23 has them too):
# their text must not count. Lines are kept, so constructs stay at the start of their line.
_NOISE = re.compile(
    rb"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|\[\[[^\]\n]*\]\]",
    re.DOTALL,
)
# Tests of __cplusplus that tell C from C++: ``#ifdef __cplusplus``, ``#if defined(__cplusplus)``
# (alone or with ``&&``), ``#if __cplusplus``; a group is set when negated (``#ifndef``, ``!``).
# A bare version test (``#if __cplusplus >= 201103L``) is not one: C++ headers wrap their whole
# text in it, and C headers test ``defined(__cplusplus)`` first.
_IF_CPLUSPLUS = re.compile(
    rb"#[ \t]*if(?:(n)?def[ \t]+__cplusplus\b|[ \t]+(!)?[ \t]*__cplusplus\b(?![ \t]*[<>=!])"
    rb"|.*?(!)?[ \t]*defined[ \t]*\(?[ \t]*__cplusplus\b)"
)
_DIRECTIVE = re.compile(rb"#[ \t]*(if|el|endif)")

# Constructs that C cannot have. The text searched starts with a newline, so ``\n`` finds them at
# the start of the first line too.
_CPP = re.compile(
    rb"\n[ \t]*(?:(?:class|namespace)[ \t]+\w|namespace[ \t]*\{|template[ \t]*<"
    rb"|(?:public|private|protected)[ \t]*:(?!:))"
    rb"|::[ \t]*[~\w]"  # std::string, Foo::~Foo, ::operator new: C has no ``::``
    rb"|#[ \t]*include[ \t]*<[\w/]+>"  # <iostream>, <type_traits>: C's own headers end in .h
    # Not ``constexpr`` or ``nullptr`` (C23 has them), nor ``extern "C++"``: glibc's C headers
    # declare C++ overloads in it, under a macro that only C++ compilers define.
    rb"|(?<!\w)(?:decltype|noexcept|virtual|static_cast|reinterpret_cast|const_cast|dynamic_cast"
    rb"|using[ \t]+namespace)\b"
)
# A word of one of those constructs: a header with none of them is C without a closer look.
_HINTS: tuple[bytes, ...] = (b"::", b"class", b"namespace", b"template", b"public", b"private")
_HINTS += (b"protected", b"decltype", b"noexcept", b"virtual", b"_cast", b"using")
_STD_INCLUDE = re.compile(rb"#[ \t]*include[ \t]*<[\w/]+>")


def _keep(match: re.Match[bytes]) -> bytes:
    text = match.group()
    if text.startswith(b"/*"):
        return b"\n" * text.count(b"\n") or b" "
    return b'""' if text.startswith(b'"') else b" "


def _outside_cplusplus(text: bytes) -> bytes:
    """The lines a C compiler reads: branches that only a C++ compiler takes are dropped."""
    if b"__cplusplus" not in text:
        return text
    kept: list[bytes] = []
    # One entry per open #if: None when it does not test __cplusplus, else whether its current
    # branch is the one C++ compilers take (``#else`` and ``#elif`` flip it).
    branches: list[bool | None] = []
    cpp_depth = 0  # how many open branches are C++ only
    for line in text.split(b"\n"):
        stripped = line.lstrip()
        directive = _DIRECTIVE.match(stripped) if stripped.startswith(b"#") else None
        if directive is None:
            if not cpp_depth:
                kept.append(line)
            continue
        kind = directive.group(1)
        if kind == b"if":
            cond = _IF_CPLUSPLUS.match(stripped)
            branch = None
            if cond is not None and b"||" not in stripped:
                branch = cond.group(1) is None and cond.group(2) is None and cond.group(3) is None
            branches.append(branch)
            cpp_depth += branch is True
        elif branches and branches[-1] is not None:
            cpp_depth -= branches[-1]
            if kind == b"el":
                branches[-1] = not branches[-1]
                cpp_depth += branches[-1]
            else:
                branches.pop()
        elif branches and kind == b"endif":
            branches.pop()
    return b"\n".join(kept)


def _hinted(text: bytes) -> bool:
    return any(hint in text for hint in _HINTS) or _STD_INCLUDE.search(text) is not None


def is_cpp(source: bytes) -> bool:
    """Whether a header's text (its head is enough) uses C++ that C cannot parse."""
    head = source[:SNIFF_BYTES]
    if not _hinted(head):  # most C headers: no closer look needed
        return False
    text = _outside_cplusplus(_NOISE.sub(_keep, head))
    # Most hints in C headers were in comments or C++-only branches: check again before searching.
    return _hinted(text) and _CPP.search(b"\n" + text) is not None
