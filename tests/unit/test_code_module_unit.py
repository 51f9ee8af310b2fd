"""A file's code outside its units becomes one ``module`` unit: what it keeps and what it leaves."""

from __future__ import annotations

from learning_memory.shared.contracts.code import CodeUnit, Language
from learning_memory.worker.code.index.parser import parse_source


def units(source: bytes, language: Language, file_path: str) -> list[CodeUnit]:
    result = parse_source(source, language=language, project="p", file_path=file_path)
    assert result.error is None
    return result.units


def module(source: bytes, language: Language, file_path: str) -> CodeUnit | None:
    found = [u for u in units(source, language, file_path) if u.unit_type == "module"]
    assert len(found) <= 1
    return found[0] if found else None


def test_python_globals_and_docstring_kept_imports_and_definitions_left_out() -> None:
    source = b'''"""Signals sent by the application while it handles a request."""
from __future__ import annotations

import blinker

_signals = blinker.Namespace()
request_started = _signals.signal("request-started")
request_finished = _signals.signal("request-finished")


def send(name):
    """Send one."""
    return _signals.signal(name).send()
'''
    found = module(source, "python", "pkg/signals.py")
    assert found is not None
    assert (found.name, found.qualified_name, found.signature) == (
        "signals.py",
        "signals.py",
        "pkg/signals.py",
    )
    assert "Signals sent by the application" in found.body and "request_finished" in found.body
    assert "import" not in found.body and "def send" not in found.body
    assert (found.start_line, found.end_line, found.line_count) == (1, 8, 8)
    assert found.complexity is None and not found.has_docstring
    # Source order: the module unit before the function, which keeps its own unit.
    assert [u.unit_type for u in units(source, "python", "pkg/signals.py")] == ["module", "function"]


def test_rust_re_exports_stay_plain_uses_go() -> None:
    source = b"""//! Types and traits for extracting data from requests.
use std::fmt;

pub mod path;
pub mod rejection;

pub use axum_core::extract::{FromRequest, FromRequestParts, OptionalFromRequest};

fn helper() -> u8 {
    1
}
"""
    found = module(source, "rust", "extract/mod.rs")
    assert found is not None
    assert "pub use axum_core::extract::{FromRequest" in found.body and "pub mod rejection;" in found.body
    assert "use std::fmt" not in found.body and "fn helper" not in found.body


def test_comments_alone_make_no_module_and_licences_and_unit_comments_are_left_out() -> None:
    banner = b"""// Copyright 2024 The Authors. Licensed under the MIT licence.
// If you are making an adapter, look at this file for reference and import from the package.
// If you are making an adapter, look at this file for reference and import from the package.
import { thing } from './thing';

// Handles one request.
export function handle(request: Request): Response {
  return thing(request);
}
"""
    assert module(banner, "typescript", "adapters/index.ts") is None
    with_code = (
        banner
        + b"\nexport const DEFAULT_TIMEOUT_MS = 30_000;\nexport const RETRY_STATUS_CODES = [429, 502, 503];\n"
    )
    found = module(with_code, "typescript", "adapters/index.ts")
    assert found is not None
    assert "RETRY_STATUS_CODES" in found.body and "reference and import" in found.body
    assert "Copyright" not in found.body and "Handles one request" not in found.body


def test_code_inside_a_namespace_is_reached() -> None:
    source = b"""#include <string>
namespace fmt {
inline constexpr int default_precision = 6;
template <typename T> using buffer_context = basic_format_context<T, char>;
int format_width(const char* spec) {
  return spec[0];
}
}  // namespace fmt
"""
    found = module(source, "cpp", "include/fmt/core.h")
    assert found is not None
    assert "default_precision" in found.body and "buffer_context" in found.body
    assert "#include" not in found.body and "format_width" not in found.body


def test_a_file_of_definitions_only_has_no_module_unit() -> None:
    source = (
        b'package chi\n\nimport "net/http"\n\nfunc Handle(w http.ResponseWriter) {\n\tw.WriteHeader(200)\n}\n'
    )
    assert module(source, "go", "handle.go") is None


def test_type_aliases_and_macros_are_units() -> None:
    ts = b"export type inferProcedureInput<T> = T extends { input: infer I } ? I : never;\n"
    assert [(u.unit_type, u.name) for u in units(ts, "typescript", "procedure.ts")] == [
        ("class", "inferProcedureInput")
    ]
    rust = b"pub type BoxError = Box<dyn std::error::Error>;\nmacro_rules! ready { ($e:expr) => { $e }; }\n"
    assert [(u.unit_type, u.name) for u in units(rust, "rust", "lib.rs")] == [
        ("class", "BoxError"),
        ("function", "ready"),
    ]
    c = b"#define UV_MAX(a, b) ((a) > (b) ? (a) : (b))\n"
    assert [(u.unit_type, u.name) for u in units(c, "c", "uv-common.h")] == [("function", "UV_MAX")]
    swift = b"public typealias Parameters = [String: Any]\n"
    assert [(u.unit_type, u.name) for u in units(swift, "swift", "Parameters.swift")] == [
        ("class", "Parameters")
    ]
    scala = b"object Id {\n  type Id[A] = A\n}\n"
    assert ("class", "Id.Id") in [(u.unit_type, u.qualified_name) for u in units(scala, "scala", "Id.scala")]


def test_c_prototypes_are_left_out_of_the_module_unit() -> None:
    source = b"""#ifndef UV_SRC_IDNA_H_
#define UV_SRC_IDNA_H_
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
/* Decode one UTF-8 character. */
unsigned uv__utf8_decode1(const char** p, const char* pe);
char* uv__strndup(const char* s, size_t n);
#ifdef __cplusplus
}
#endif
#endif
"""
    assert module(source, "c", "src/idna.h") is None
    with_table = (
        source + b'static const char* const uv__error_names[] = { "EOF", "EAGAIN", "ENOMEM", "EINVAL" };\n'
    )
    found = module(with_table, "c", "src/idna.h")
    assert found is not None and "uv__error_names" in found.body and "uv__strndup" not in found.body
