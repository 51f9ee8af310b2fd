"""Whether a ``.h`` header is C++, from its text alone."""

from __future__ import annotations

import pytest

from learning_memory.worker.code.index.headers import SNIFF_BYTES, is_cpp

EXTERN_C_GUARDS = b"""#ifndef RING_H
#define RING_H
#ifdef __cplusplus
extern "C" {
#endif

struct ring { char *data; int size; };
int ring_push(struct ring *r, char c);

#ifdef __cplusplus
}
#endif
#endif
"""


@pytest.mark.parametrize(
    "source",
    [
        b"namespace net {\nint port();\n}\n",
        b"namespace {\nint hidden;\n}\n",
        b"class Session;\n",
        b"template <typename T>\nT biggest(T a, T b);\n",
        b"struct Point {\n public:\n  int x;\n};\n",
        b"std::string name(void);\n",
        b"int Counter::next() { return ++n; }\n",
        b"#include <vector>\n",
        b"#include <experimental/optional>\n",
        b"int f(void) noexcept;\n",
        b"using namespace std;\n",
        b"#define AS_INT(x) static_cast<int>(x)\n",
        # libstdc++ wraps whole headers in a version test: it is no C branch.
        b"#if __cplusplus >= 201103L\nnamespace std {\n}\n#endif\n",
        # The #else of ``#ifdef __cplusplus`` is what C reads; what follows #endif is read by both.
        b"#ifdef __cplusplus\n#else\n#endif\nclass Widget {};\n",
    ],
)
def test_cpp_headers(source: bytes) -> None:
    assert is_cpp(source)


@pytest.mark.parametrize(
    "source",
    [
        EXTERN_C_GUARDS,
        b"",
        b"int open(const char *path, int flags);\n",
        b"#include <stdio.h>\n#include <sys/types.h>\n",
        # Constructs in comments and strings do not count.
        b"// Wraps std::vector in the C++ binding.\nint f(void);\n",
        b"/* class Session\n   namespace net {\n   template <T> */\nint g(void);\n",
        b"static const char *sep = \"::\";\nstatic const char c = ':';\n",
        b'#error "do not #include <vector> here"\n',
        # C words that C++ reserves, used as C names; C23 attributes; C23 nullptr.
        b"int class_count;\nstruct t { int template_id; int virtual_size; };\n",
        b"[[gnu::unused]] static int spare;\n",
        b"#define NOTHING nullptr\n",
        # C++ kept in branches that only C++ compilers read.
        b"#ifdef __cplusplus\ntemplate <class T> T id(T x) { return x; }\n#endif\nint h(void);\n",
        b"#if defined(API_CPP) && defined(__cplusplus)\nclass Api {};\n#endif\n",
        b"#ifndef __cplusplus\ntypedef int bool_t;\n#else\nnamespace n {}\n#endif\n",
        b"#if defined(__cplusplus)\n#  if X\n#  endif\nclass A;\n#endif\nint k(void);\n",
        # glibc's C headers declare C++ overloads in ``extern "C++"`` under a macro of their own.
        b'#ifdef __CORRECT_ISO_CPP_STRING_H_PROTO\nextern "C++" {\nchar *strchr(char *s, int c);\n'
        b"}\n#endif\n",
    ],
)
def test_c_headers(source: bytes) -> None:
    assert not is_cpp(source)


def test_only_the_head_is_read() -> None:
    source = b"/*" + b" " * SNIFF_BYTES + b"*/\nnamespace late {}\n"
    assert not is_cpp(source)
    assert is_cpp(b"namespace early {}\n" + source)
