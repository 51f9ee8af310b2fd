"""C and C++ macros standing for syntax are blanked before parsing, so the units around them survive."""

from __future__ import annotations

from learning_memory.worker.code.index.macros import blank_macros
from learning_memory.worker.code.index.parser import parse_source

FMT_STYLE = b"""FMT_BEGIN_NAMESPACE
namespace detail {
class dynamic_arg_list {
  template <typename T> struct typed_node {
    T value;
    FMT_CONSTEXPR typed_node(const T& arg) : value(arg) {}
  };
};
}  // namespace detail

FMT_EXPORT template <typename Context> class dynamic_format_arg_store {
  template <typename T> void push_back(const T& arg) {
    if FMT_CONSTEXPR20 (sizeof(T) > 8) {
      emplace(arg);
    }
  }
  void clear() { data_.clear(); }
};

FMT_END_NAMESPACE
"""


def test_blanking_keeps_every_offset_and_line() -> None:
    blanked = blank_macros(FMT_STYLE, cpp=True)
    assert len(blanked) == len(FMT_STYLE) and blanked.count(b"\n") == FMT_STYLE.count(b"\n")
    for macro in (
        b"FMT_BEGIN_NAMESPACE",
        b"FMT_END_NAMESPACE",
        b"FMT_EXPORT",
        b"FMT_CONSTEXPR",
        b"FMT_CONSTEXPR20",
    ):
        assert macro not in blanked
    assert b"if   " in blanked and b"class dynamic_format_arg_store" in blanked


def test_a_header_behind_namespace_macros_parses_into_its_classes() -> None:
    units = parse_source(FMT_STYLE, language="cpp", project="p", file_path="include/fmt/args.h").units
    names = {(u.unit_type, u.qualified_name) for u in units}
    assert ("class", "dynamic_format_arg_store") in names
    assert ("method", "dynamic_format_arg_store.clear") in names
    assert ("method", "dynamic_arg_list.typed_node.typed_node") in names
    push_back = next(u for u in units if u.qualified_name == "dynamic_format_arg_store.push_back")
    # Units keep the source's own text, macros included.
    assert "if FMT_CONSTEXPR20 (sizeof(T) > 8)" in push_back.body
    assert (push_back.start_line, push_back.end_line) == (12, 16)


def test_c_keeps_capitalised_type_names() -> None:
    source = b"HANDLE uv__open(DWORD flags);\nDWORD WINAPI uv__thread_start(void* arg) {\n  return 0;\n}\n"
    assert blank_macros(source, cpp=False) == source
    # An enumerator list ends without a comma: it is not a macro alone on its line when it
    # keeps a comma, and a last one alone is harmless to the parse.
    enum = b"enum { UV_A,\n  UV_B,\n  UV_LAST\n};\n"
    assert b"UV_A," in blank_macros(enum, cpp=False)
