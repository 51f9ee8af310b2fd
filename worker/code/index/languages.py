"""What the parser needs to know about each grammar, as data: one generic tree walk reads these tables.

Node-type names are the grammars' own (see each wheel's ``node-types.json``); a test checks that
every name here exists in its grammar, so a renamed node after a grammar upgrade fails loudly.
"""

from __future__ import annotations

from dataclasses import replace

from learning_memory.shared.contracts.code import Language
from learning_memory.worker.code.index.language_spec import LangSpec
from learning_memory.worker.code.index.language_spec import node_types as _s

_EMPTY: frozenset[str] = frozenset()

_JS_FUNCTIONS = _s(
    "function_declaration",
    "generator_function_declaration",
    "method_definition",
    "function_expression",
    "arrow_function",
    "generator_function",
)
_JS_DECISIONS = _s(
    "if_statement",
    "for_statement",
    "for_in_statement",
    "while_statement",
    "do_statement",
    "catch_clause",
    "ternary_expression",
)
_JS = LangSpec(
    module="tree_sitter_javascript",
    functions=_JS_FUNCTIONS,
    classes=_s("class_declaration", "class"),
    decisions=_JS_DECISIONS,
    cases=_s("switch_case"),
    logical=_s("binary_expression"),
    comments=_s("comment"),
    wrappers=_s(
        "export_statement",
        "lexical_declaration",
        "variable_declaration",
        "variable_declarator",
        "field_definition",
    ),
    parent_names={"variable_declarator": "name", "field_definition": "property"},
    requires={"class": ("name", _EMPTY)},
    imports=_s("import_statement"),
)
_TS_CLASSES = _s(
    "type_alias_declaration",
    "class_declaration",
    "abstract_class_declaration",
    "interface_declaration",
    "enum_declaration",
    "internal_module",
    "module",
)
_TS = LangSpec(
    module="tree_sitter_typescript",
    loader="language_typescript",
    functions=_JS_FUNCTIONS | _s("abstract_method_signature", "function_signature"),
    classes=_TS_CLASSES | _s("class"),
    decisions=_JS_DECISIONS,
    cases=_s("switch_case"),
    logical=_s("binary_expression"),
    comments=_s("comment"),
    wrappers=_s(
        "export_statement",
        "lexical_declaration",
        "variable_declaration",
        "variable_declarator",
        "public_field_definition",
        "ambient_declaration",
    ),
    parent_names={"variable_declarator": "name", "public_field_definition": "name"},
    requires={"class": ("name", _EMPTY)},
    imports=_s("import_statement"),
)

_C_DECISIONS = _s(
    "if_statement", "for_statement", "while_statement", "do_statement", "conditional_expression"
)

LANGUAGE_SPECS: dict[Language, LangSpec] = {
    "python": LangSpec(
        module="tree_sitter_python",
        functions=_s("function_definition"),
        classes=_s("class_definition"),
        decisions=_s(
            "if_statement",
            "elif_clause",
            "for_statement",
            "while_statement",
            "except_clause",
            "conditional_expression",
            "boolean_operator",
            "for_in_clause",
            "if_clause",
            "case_clause",
        ),
        comments=_s("comment"),
        wrappers=_s("decorated_definition"),
        python_docstrings=True,
        imports=_s("import_statement", "import_from_statement", "future_import_statement"),
    ),
    "javascript": _JS,
    "typescript": _TS,
    "tsx": replace(_TS, loader="language_tsx"),
    "go": LangSpec(
        module="tree_sitter_go",
        functions=_s("function_declaration", "method_declaration"),
        classes=_s("type_spec"),
        decisions=_s("if_statement", "for_statement"),
        cases=_s("expression_case", "type_case", "communication_case"),
        logical=_s("binary_expression"),
        comments=_s("comment"),
        wrappers=_s("type_declaration"),
        requires={"type_spec": ("type", _s("struct_type", "interface_type"))},
        body_types=_s("field_declaration_list"),
        receiver_field="receiver",
        imports=_s("package_clause", "import_declaration"),
    ),
    "rust": LangSpec(
        module="tree_sitter_rust",
        functions=_s("function_item", "function_signature_item", "macro_definition"),
        classes=_s(
            "struct_item", "enum_item", "union_item", "trait_item", "impl_item", "mod_item", "type_item"
        ),
        decisions=_s("if_expression", "for_expression", "while_expression", "loop_expression"),
        cases=_s("match_arm"),
        logical=_s("binary_expression"),
        comments=_s("line_comment", "block_comment"),
        between=_s("attribute_item"),
        name_fields={"impl_item": ("type",)},
        requires={"mod_item": ("body", _EMPTY)},
        imports=_s("use_declaration", "extern_crate_declaration"),
    ),
    "java": LangSpec(
        module="tree_sitter_java",
        functions=_s("method_declaration", "constructor_declaration", "compact_constructor_declaration"),
        classes=_s(
            "class_declaration",
            "interface_declaration",
            "enum_declaration",
            "record_declaration",
            "annotation_type_declaration",
        ),
        decisions=_s(
            "if_statement",
            "for_statement",
            "enhanced_for_statement",
            "while_statement",
            "do_statement",
            "catch_clause",
            "ternary_expression",
        ),
        cases=_s("switch_label"),
        logical=_s("binary_expression"),
        comments=_s("line_comment", "block_comment"),
        imports=_s("package_declaration", "import_declaration"),
    ),
    "c": LangSpec(
        module="tree_sitter_c",
        functions=_s("function_definition", "preproc_function_def"),
        classes=_s("struct_specifier", "union_specifier", "enum_specifier"),
        decisions=_C_DECISIONS,
        cases=_s("case_statement"),
        logical=_s("binary_expression"),
        comments=_s("comment"),
        wrappers=_s("type_definition"),
        name_fields={"function_definition": ("declarator",)},
        parent_names={"type_definition": "declarator"},
        requires={n: ("body", _EMPTY) for n in ("struct_specifier", "union_specifier", "enum_specifier")},
        imports=_s("preproc_include"),
        prototypes=_s("declaration"),
    ),
    "cpp": LangSpec(
        module="tree_sitter_cpp",
        functions=_s("function_definition", "preproc_function_def"),
        classes=_s("class_specifier", "struct_specifier", "union_specifier", "enum_specifier"),
        decisions=_C_DECISIONS | _s("for_range_loop", "catch_clause"),
        cases=_s("case_statement"),
        logical=_s("binary_expression"),
        comments=_s("comment"),
        wrappers=_s("type_definition", "template_declaration"),
        name_fields={"function_definition": ("declarator",)},
        parent_names={"type_definition": "declarator"},
        requires={
            n: ("body", _EMPTY)
            for n in ("class_specifier", "struct_specifier", "union_specifier", "enum_specifier")
        },
        imports=_s("preproc_include"),
        prototypes=_s("declaration"),
    ),
    "csharp": LangSpec(
        module="tree_sitter_c_sharp",
        functions=_s(
            "method_declaration",
            "constructor_declaration",
            "destructor_declaration",
            "operator_declaration",
            "local_function_statement",
        ),
        classes=_s(
            "class_declaration",
            "struct_declaration",
            "interface_declaration",
            "enum_declaration",
            "record_declaration",
        ),
        decisions=_s(
            "if_statement",
            "for_statement",
            "foreach_statement",
            "while_statement",
            "do_statement",
            "catch_clause",
            "conditional_expression",
            "switch_expression_arm",
        ),
        cases=_s("switch_section"),
        logical=_s("binary_expression"),
        comments=_s("comment"),
        imports=_s("using_directive", "file_scoped_namespace_declaration"),
    ),
    "ruby": LangSpec(
        module="tree_sitter_ruby",
        functions=_s("method", "singleton_method"),
        classes=_s("class", "module", "singleton_class"),
        decisions=_s(
            "if",
            "elsif",
            "unless",
            "while",
            "until",
            "for",
            "if_modifier",
            "unless_modifier",
            "while_modifier",
            "until_modifier",
            "when",
            "rescue",
            "rescue_modifier",
            "conditional",
        ),
        logical=_s("binary"),
        comments=_s("comment"),
        default_names={"singleton_class": "self"},
    ),
    "php": LangSpec(
        module="tree_sitter_php",
        loader="language_php",
        functions=_s("function_definition", "method_declaration"),
        classes=_s("class_declaration", "interface_declaration", "trait_declaration", "enum_declaration"),
        decisions=_s(
            "if_statement",
            "else_if_clause",
            "for_statement",
            "foreach_statement",
            "while_statement",
            "do_statement",
            "catch_clause",
            "conditional_expression",
            "match_conditional_expression",
        ),
        cases=_s("case_statement"),
        logical=_s("binary_expression"),
        comments=_s("comment"),
        imports=_s("namespace_use_declaration", "namespace_definition"),
    ),
    "kotlin": LangSpec(
        module="tree_sitter_kotlin",
        functions=_s("function_declaration", "secondary_constructor"),
        classes=_s("class_declaration", "object_declaration", "companion_object"),
        decisions=_s(
            "if_expression", "for_statement", "while_statement", "do_while_statement", "catch_block"
        ),
        cases=_s("when_entry"),
        logical=_s("binary_expression"),
        comments=_s("line_comment", "block_comment"),
        default_names={"companion_object": "Companion", "secondary_constructor": "constructor"},
        body_types=_s("function_body", "class_body", "enum_class_body"),
        imports=_s("package_header", "import"),
    ),
    "swift": LangSpec(
        module="tree_sitter_swift",
        functions=_s(
            "function_declaration",
            "protocol_function_declaration",
            "init_declaration",
            "deinit_declaration",
        ),
        classes=_s("class_declaration", "protocol_declaration", "typealias_declaration"),
        decisions=_s(
            "if_statement",
            "guard_statement",
            "for_statement",
            "while_statement",
            "repeat_while_statement",
            "catch_block",
            "ternary_expression",
            "conjunction_expression",
            "disjunction_expression",
            "nil_coalescing_expression",
        ),
        cases=_s("switch_entry"),
        comments=_s("comment", "multiline_comment"),
        default_names={"init_declaration": "init", "deinit_declaration": "deinit"},
        imports=_s("import_declaration"),
    ),
    "scala": LangSpec(
        module="tree_sitter_scala",
        functions=_s("function_definition", "function_declaration"),
        classes=_s(
            "class_definition", "object_definition", "trait_definition", "enum_definition", "type_definition"
        ),
        decisions=_s(
            "if_expression",
            "for_expression",
            "while_expression",
            "do_while_expression",
        ),
        # A ``catch`` is a block of ``case`` clauses: its arms count, not the catch itself.
        cases=_s("case_clause"),
        logical=_s("infix_expression"),
        comments=_s("comment", "block_comment"),
        imports=_s("package_clause", "import_declaration"),
    ),
}
