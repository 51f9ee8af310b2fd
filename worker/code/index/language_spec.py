"""What the parser reads about a grammar (:class:`LangSpec`), and which file is in which language.

The tables themselves, one per language, are in :mod:`.languages`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from learning_memory.shared.contracts.code import Language

_EMPTY: frozenset[str] = frozenset()


def node_types(*names: str) -> frozenset[str]:
    return frozenset(names)


@dataclass(frozen=True)
class LangSpec:
    module: str  # the grammar wheel, imported lazily
    loader: str = "language"  # the wheel's function returning the grammar
    functions: frozenset[str] = _EMPTY  # "function", or "method" inside a class-like scope
    classes: frozenset[str] = _EMPTY  # class, struct, interface, trait, enum, impl, object, module
    decisions: frozenset[str] = _EMPTY  # each occurrence adds one to cyclomatic complexity
    cases: frozenset[str] = _EMPTY  # case arms: count, except a ``default``/``else`` arm
    logical: frozenset[str] = _EMPTY  # binary nodes: count when the ``operator`` is &&, ||, ...
    comments: frozenset[str] = _EMPTY
    # Nodes that only wrap one unit (``export``, decorators, ``template<>``, ``const f = () =>``):
    # the unit's text, lines, signature and leading comment are taken from the wrapper.
    wrappers: frozenset[str] = _EMPTY
    # Nodes allowed between a leading comment and its unit (Rust ``#[derive]``, ...).
    between: frozenset[str] = _EMPTY
    # Where the name is, by unit node type, when not in the ``name`` field; a ``declarator``
    # chain (C, C++) is followed down to the identifier.
    name_fields: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Anonymous units named by their parent: parent node type -> the parent's field holding the name.
    parent_names: Mapping[str, str] = field(default_factory=dict)
    default_names: Mapping[str, str] = field(default_factory=dict)  # e.g. Swift ``init``
    # A unit node counts only if this field is present and, when types are given, of those types
    # (a C ``struct x *p`` is a use, not a definition; a Go ``type ID string`` is not a class).
    requires: Mapping[str, tuple[str, frozenset[str]]] = field(default_factory=dict)
    # Bodies not in a ``body`` field: the first child (or grandchild) of one of these types.
    body_types: frozenset[str] = _EMPTY
    receiver_field: str | None = None  # Go: the method's receiver names its type
    python_docstrings: bool = False
    # Statements naming other files (imports, a package line): left out of the module unit.
    imports: frozenset[str] = _EMPTY
    # Declarations that are prototypes when they declare a function (C's ``int f(void);``): left
    # out of the module unit too, since they repeat a definition found in the source files.
    prototypes: frozenset[str] = _EMPTY


# Operators of a ``logical`` node that make it a decision point.
LOGICAL_OPERATORS: frozenset[bytes] = frozenset({b"&&", b"||", b"and", b"or", b"??", b"?:"})
# Case arms whose text starts so are the fall-through arm, not a decision.
DEFAULT_ARM_PREFIXES: tuple[bytes, ...] = (b"default", b"else")

EXTENSIONS: dict[str, Language] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    # A .h may be C or C++: C by its name, and the parser reads it as C++ when its text is
    # (worker.code.index.headers), because the file is already in memory there.
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".sc": "scala",
}
