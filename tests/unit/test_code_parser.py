"""The tree-sitter parser: units, names, lines, docstrings and complexity for every language."""

from __future__ import annotations

import importlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from tree_sitter import Language as TSLanguage

from learning_memory.shared.contracts.code import LANGUAGES, CodeUnit, Language
from learning_memory.worker.code.index.languages import LANGUAGE_SPECS
from learning_memory.worker.code.index.parse_docs import clean_comment
from learning_memory.worker.code.index.parser import language_for, parse_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "code"


@dataclass(frozen=True)
class Expect:
    fixture: str
    units: set[tuple[str, str]]  # (unit_type, qualified_name)
    lines: tuple[str, int, int]  # a unit's qualified_name, start_line, end_line
    doc: tuple[str, str]  # a unit's qualified_name and its docstring
    comment: tuple[str, str]  # the free function with a leading comment, and the comment
    branchy: tuple[str, int]  # the branchy function and its cyclomatic complexity
    signature: tuple[str, str]  # a unit's qualified_name and how its signature starts


def _load_expected() -> dict[Language, Expect]:
    """Expectations per fixture, as data. Some names appear twice on purpose: a Rust struct and
    its ``impl``, a Swift class and its ``extension``, a Scala class and its companion object."""
    raw: dict[Language, dict[str, Any]] = json.loads((FIXTURES / "expected.json").read_text())
    return {
        language: Expect(
            fixture=e["fixture"],
            units={(kind, name) for kind, name in e["units"]},
            lines=(e["lines"][0], e["lines"][1], e["lines"][2]),
            doc=(e["doc"][0], e["doc"][1]),
            comment=(e["comment"][0], e["comment"][1]),
            branchy=(e["branchy"][0], e["branchy"][1]),
            signature=(e["signature"][0], e["signature"][1]),
        )
        for language, e in raw.items()
    }


EXPECTED = _load_expected()


def parse_fixture(language: Language) -> list[CodeUnit]:
    name = EXPECTED[language].fixture
    result = parse_source((FIXTURES / name).read_bytes(), language=language, project="demo", file_path=name)
    assert result.error is None
    return result.units


def unit(units: list[CodeUnit], qualified_name: str) -> CodeUnit:
    matches = [u for u in units if u.qualified_name == qualified_name and u.unit_type != "class"]
    matches = matches or [u for u in units if u.qualified_name == qualified_name]
    assert matches, f"no unit {qualified_name}: {[u.qualified_name for u in units]}"
    return matches[0]


def test_every_language_has_a_fixture() -> None:
    assert set(EXPECTED) == set(LANGUAGES) == set(LANGUAGE_SPECS)


@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_units_of_each_language(language: Language) -> None:
    expect = EXPECTED[language]
    units = parse_fixture(language)
    assert {(u.unit_type, u.qualified_name) for u in units} == expect.units

    name, start, end = expect.lines
    found = unit(units, name)
    assert (found.start_line, found.end_line, found.line_count) == (start, end, end - start + 1)
    source_lines = (FIXTURES / expect.fixture).read_text().splitlines()
    assert found.body.splitlines()[0].strip() == source_lines[start - 1].strip()

    name, doc = expect.doc
    assert unit(units, name).docstring == doc
    assert unit(units, name).has_docstring
    name, comment = expect.comment
    assert unit(units, name).docstring == comment

    name, complexity = expect.branchy
    assert unit(units, name).complexity == complexity
    assert not unit(units, name).has_docstring

    name, prefix = expect.signature
    assert unit(units, name).signature.startswith(prefix)


@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_unit_invariants(language: Language) -> None:
    for u in parse_fixture(language):
        assert (u.project, u.file_path, u.language) == ("demo", EXPECTED[language].fixture, language)
        assert u.name == u.qualified_name.rsplit(".", 1)[-1]
        assert u.line_count == u.end_line - u.start_line + 1 == len(u.body.splitlines())
        assert u.signature and "\n" not in u.signature and len(u.signature) <= 300
        assert u.has_docstring == (u.docstring is not None)
        # Classes have no single control flow; functions start at 1, and straight-line ones stay there.
        assert (u.complexity is None) == (u.unit_type == "class")


@pytest.mark.parametrize("language", sorted(LANGUAGE_SPECS))
def test_language_tables_name_real_node_types(language: Language) -> None:
    """A typo, or a node renamed by a grammar upgrade, would silently stop matching."""
    spec = LANGUAGE_SPECS[language]
    grammar = TSLanguage(getattr(importlib.import_module(spec.module), spec.loader)())
    names = {grammar.node_kind_for_id(i) for i in range(grammar.node_kind_count)}
    used = spec.functions | spec.classes | spec.decisions | spec.cases | spec.logical | spec.comments
    used |= spec.wrappers | spec.between | spec.body_types | set(spec.parent_names) | set(spec.requires)
    used |= spec.imports | spec.prototypes
    assert used - names == set()


def test_python_nested_functions_and_decorators() -> None:
    source = b'''
class A:
    @property
    def value(self):
        def helper(x):
            return x and 1
        return helper(2)


@cache
async def fetch(url):
    """Fetch it."""
    return url
'''
    units = parse_source(source, language="python", project="p", file_path="a.py").units
    by_name = {u.qualified_name: u for u in units}
    assert set(by_name) == {"A", "A.value", "A.value.helper", "fetch"}
    assert by_name["A.value"].unit_type == "method"
    assert by_name["A.value"].complexity == 1  # helper's `and` is helper's own
    assert by_name["A.value.helper"].unit_type == "function"
    assert by_name["A.value.helper"].complexity == 2
    assert by_name["fetch"].signature == "@cache async def fetch(url):"
    assert (by_name["fetch"].start_line, by_name["fetch"].docstring) == (10, "Fetch it.")


@pytest.mark.parametrize(
    ("language", "source", "expected"),
    [
        ("ruby", b"class A\n  def <=>(o)\n    1\n  end\nend\n", [("class", "A"), ("method", "A.<=>")]),
        (
            "go",
            b"package a\nfunc (r *Repo[T]) Save() {}\ntype (\n A struct{}\n B interface{}\n C int\n)\n",
            [("method", "Repo.Save"), ("class", "A"), ("class", "B")],
        ),
        (
            "cpp",
            b"template<class T> void Foo<T>::bar() {}\nA::~A() {}\nbool operator==(A a, A b) { return 1; }\n",
            [("method", "Foo.bar"), ("method", "A.~A"), ("function", "operator==")],
        ),
        (
            "javascript",
            b"const a = 1, f = () => 2;\nclass C { h = () => 1; static s() {} }\nfoo(() => 3);\n",
            [("function", "f"), ("class", "C"), ("method", "C.h"), ("method", "C.s")],
        ),
        (
            "kotlin",  # outer before inner even when both start on one line
            b"class B { constructor(x: Int) {} }\nfun String.isEmail(): Boolean = true\n",
            [("class", "B"), ("method", "B.constructor"), ("function", "isEmail")],
        ),
        (
            "rust",
            b"impl<T: Clone> fmt::Display for Wrapper<T> {\n    fn fmt(&self) {}\n}\n",
            [("class", "Wrapper"), ("method", "Wrapper.fmt")],
        ),
        ("c", b"struct s *make(struct s *p);\nstruct s;\n", []),  # uses and prototypes, not units
    ],
)
def test_names_across_languages(language: Language, source: bytes, expected: list[tuple[str, str]]) -> None:
    result = parse_source(source, language=language, project="p", file_path="x")
    assert result.error is None
    assert [(u.unit_type, u.qualified_name) for u in result.units] == expected


def test_doc_comment_above_attributes() -> None:
    source = b"/// Doc.\n#[derive(Debug)]\n#[serde(x)]\npub struct T;\n"
    [unit] = parse_source(source, language="rust", project="p", file_path="t.rs").units
    assert (unit.docstring, unit.start_line, unit.signature) == ("Doc.", 4, "pub struct T;")


def test_syntax_errors_still_yield_recovered_units() -> None:
    source = b"def good(a):\n    return a\n\ndef broken(:\n    pass\n\n"
    source += b"class Fine:\n    def m(self):\n        pass\n"
    result = parse_source(source, language="python", project="p", file_path="bad.py")
    assert result.error is None
    names = {u.qualified_name for u in result.units}
    assert {"good", "Fine", "Fine.m"} <= names


def test_nothing_readable_is_a_parse_error() -> None:
    result = parse_source(b"}}}} ((( !!! ]]]", language="java", project="p", file_path="x.java")
    assert result.units == []
    assert result.error is not None and result.error.error_type == "parse_error"


def test_binary_input_is_an_encoding_error() -> None:
    result = parse_source(b"\x7fELF\x02\x01\x00\x00\xff\xfe", language="c", project="p", file_path="a.out.c")
    assert result.units == []
    assert result.error is not None
    assert (result.error.error_type, result.error.file_path) == ("encoding_error", "a.out.c")


def test_utf16_is_binary_looking() -> None:
    source = "def f():\n    pass\n".encode("utf-16")
    result = parse_source(source, language="python", project="p", file_path="u.py")
    assert result.error is not None and result.error.error_type == "encoding_error"


def test_latin1_source_is_read_and_bom_dropped() -> None:
    latin1 = "# Café au lait.\ndef f():\n    return 'é'\n".encode("latin-1")
    [func] = parse_source(latin1, language="python", project="p", file_path="l.py").units
    assert (func.docstring, func.start_line) == ("Café au lait.", 2)
    bom = b"\xef\xbb\xbfdef g():\n    pass\n"
    [func] = parse_source(bom, language="python", project="p", file_path="b.py").units
    assert (func.name, func.signature, func.start_line) == ("g", "def g():", 1)


@pytest.mark.parametrize("source", [b"", b"\n\n  \n"])
def test_empty_file_has_no_units_and_no_error(source: bytes) -> None:
    result = parse_source(source, language="go", project="p", file_path="e.go")
    assert (result.units, result.error) == ([], None)


def test_file_without_units_is_not_an_error() -> None:
    result = parse_source(b"import os\nprint(os.sep)\n", language="python", project="p", file_path="s.py")
    assert (result.units, result.error) == ([], None)


CPP_HEADER = b"""#pragma once
#include <string>

namespace shapes {

// A shape with an area.
class Shape {
 public:
  virtual ~Shape() = default;
  virtual double area() const = 0;
};

class Circle : public Shape {
 public:
  explicit Circle(double r) : r_(r) {}
  double area() const override { return 3.14159 * r_ * r_; }

 private:
  double r_;
};

inline double twice(const Shape& s) { return 2 * s.area(); }

}  // namespace shapes
"""


def test_cpp_header_is_read_as_cpp() -> None:
    result = parse_source(CPP_HEADER, language="c", project="p", file_path="include/shapes.h")
    assert result.error is None
    assert {u.language for u in result.units} == {"cpp"}
    assert [(u.unit_type, u.qualified_name) for u in result.units] == [
        ("class", "Shape"),
        ("method", "Shape.~Shape"),
        ("class", "Circle"),
        ("method", "Circle.Circle"),
        ("method", "Circle.area"),
        ("function", "twice"),
    ]
    # Only a header's language comes from its text: a .c file is C whatever it holds.
    as_c = parse_source(CPP_HEADER, language="c", project="p", file_path="shapes.c").units
    assert {u.language for u in as_c} == {"c"}


def test_c_header_with_extern_c_guards_stays_c() -> None:
    source = b"""#ifdef __cplusplus
extern "C" {
#endif

/* A ring buffer; the C++ wrapper is ring::Buffer. */
struct ring {
  char *data;
  int size;
};

int ring_push(struct ring *r, char c);
static inline int ring_empty(const struct ring *r) { return r->size == 0; }

#ifdef __cplusplus
}
#endif
"""
    result = parse_source(source, language="c", project="p", file_path="ring.H")
    assert result.error is None
    assert [(u.language, u.unit_type, u.name) for u in result.units if u.unit_type != "module"] == [
        ("c", "class", "ring"),
        ("c", "function", "ring_empty"),
    ]


@pytest.mark.parametrize(
    "source",
    [
        b"#include <stddef.h>\nsize_t strlcpy(char *dst, const char *src, size_t n);\nextern int verbose;\n",
        # A macro the grammar does not know is a small syntax error, not an unreadable file.
        b"#include <stddef.h>\nAPI_EXPORT size_t strlcpy(char *dst, const char *src, size_t n);\n",
        b"namespace at {\nTORCH_API at::Tensor erfinv(const at::Tensor& self);\n}\n",
    ],
)
def test_header_of_declarations_is_no_error(source: bytes) -> None:
    result = parse_source(source, language="c", project="p", file_path="api.h")
    # No function or class: at most the module unit holding the declarations.
    assert result.error is None
    assert [u.unit_type for u in result.units] in ([], ["module"])


def test_unexpected_failure_becomes_a_parse_error() -> None:
    result = parse_source(b"x = 1", language="cobol", project="p", file_path="x.cob")  # type: ignore[arg-type]
    assert result.error is not None
    assert result.error.error_type == "parse_error" and "cobol" in result.error.message


def test_comment_not_adjacent_is_not_a_docstring() -> None:
    source = b"// Header of the file.\n\nfunction f() {}\nlet x = 1; // trailing\nfunction g() {}\n"
    units = parse_source(source, language="javascript", project="p", file_path="a.js").units
    assert [(u.name, u.docstring) for u in units] == [("f", None), ("g", None)]


def test_parsing_from_several_threads() -> None:
    source = (FIXTURES / "java.java").read_bytes()
    expected = len(parse_fixture("java"))
    counts: list[int] = []

    def work() -> None:
        for _ in range(20):
            counts.append(len(parse_source(source, language="java", project="p", file_path="j").units))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counts == [expected] * 80


def test_clean_comment_strips_markers() -> None:
    assert clean_comment("/**\n * Does a thing.\n *\n * More.\n */") == "Does a thing.\n\nMore."
    assert clean_comment("/// <summary>\n/// Saves.\n/// </summary>") == "Saves."
    assert clean_comment("## Heading\n# body") == "Heading\nbody"
    assert clean_comment("/* one line */") == "one line"


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a.py", "python"),
        ("stubs/a.pyi", "python"),
        ("a.js", "javascript"),
        ("a.mjs", "javascript"),
        ("a.cjs", "javascript"),
        ("a.jsx", "javascript"),
        ("a.ts", "typescript"),
        ("a.mts", "typescript"),
        ("a.cts", "typescript"),
        ("a.tsx", "tsx"),
        ("a.go", "go"),
        ("a.rs", "rust"),
        ("A.java", "java"),
        ("a.c", "c"),
        ("a.h", "c"),
        ("a.cc", "cpp"),
        ("a.cpp", "cpp"),
        ("a.cxx", "cpp"),
        ("a.hpp", "cpp"),
        ("a.hh", "cpp"),
        ("a.hxx", "cpp"),
        ("a.cs", "csharp"),
        ("a.rb", "ruby"),
        ("a.php", "php"),
        ("a.kt", "kotlin"),
        ("build.gradle.kts", "kotlin"),
        ("a.swift", "swift"),
        ("a.scala", "scala"),
        ("a.sc", "scala"),
        ("SRC/MAIN.PY", "python"),
        ("README.md", None),
        ("Makefile", None),
        ("a.pyc", None),
        ("archive.tar.gz", None),
        (".py", None),  # a dotfile named ".py" has no suffix
    ],
)
def test_language_for(path: str, language: Language | None) -> None:
    assert language_for(PurePosixPath(path)) == language
