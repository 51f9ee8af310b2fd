"""How much each reranking rule weighs. A boost adds to a unit's fused relevance (0..1), a penalty
multiplies it, so a strong match that no rule touches keeps its place among the others. Each
rule's measured effect is in docs/ranking.md."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Weights:
    # --- a query that is an identifier asks for the unit defining it (boosts.symbol_boost) ---
    exact_definition: float = 1.5  # name equals the symbol, case and all
    folded_definition: float = 0.3  # the same name in another case (session vs Session)
    qualified_definition: float = 0.3  # the query's qualifier matches the unit's too
    type_over_function: float = 0.2  # a capitalised symbol: the class rather than a function
    file_named_after: float = 0.3  # Router in router.go
    # When nothing in the project is called that, the file named after it is the definition: a
    # module is the unit that name stands for (a "response" module is response.js).
    file_named_after_undefined: float = 1.5
    # A module binding the name at its top level, or re-exporting a name the project defines
    # nowhere, stands for its definition (see names.named_units).
    defining_module: float = 1.5
    # --- a question (boosts.question_boost) ---
    # A question whose words name the file or its folder (cookies -> cookies.py, "completion" ->
    # shell_completion.go): this much times the share of the question's words that do. A short
    # question naming a topic gains most; a long one, whose answer is one function, little.
    path_word: float = 0.2
    # A question naming code (http.get, io::copy, parseHeaders, "how the Scheduler picks a
    # task"): a unit defining that name, at a third of what a bare symbol query gives it, and a
    # file named after it (Scheduler.kt) half that. A name several candidates define shares it
    # out (an interface method every implementation defines): it tells less.
    embedded_definition: float = 0.5
    embedded_file: float = 0.25
    # A question spelling a name as separate words (JSON object, type adapter factory): the
    # unit of that name (JsonObject, TypeAdapterFactory) and the file named after it, when the
    # project has one.
    phrase_definition: float = 0.1
    phrase_file: float = 0.05
    # A short question naming a class in words is about that class ("the JSON element tree":
    # JsonElement): the class gains this much more, and the file named after it
    # phrase_type_file, both times the square of the question's topical share (below), so a long
    # question, which asks for one function, barely moves.
    phrase_type: float = 1.5
    phrase_type_file: float = 0.3
    # --- what a query did not ask for (penalties) ---
    non_code_factor: float = 0.6  # tests, examples, vendored code the query did not ask for
    other_platform_factor: float = 0.8  # code for another operating system, unless asked for
    # A question rarely asks for a constructor: it stores what the class is made of, so it
    # shares the words of everything the class does. A symbol query names the class, not the
    # constructor that shares its name.
    constructor_factor: float = 0.9
    # --- units of one file (members, files) ---
    # A question's answer is a function rather than the class around it (a class's text holds
    # all its methods, so it matches everything they do): the best member found takes the
    # class's place and the class comes next, at this share of the member's relevance.
    class_after_member: float = 0.9
    # A function nested in another found function (a closure, a local helper) is a detail of
    # it, when the outer one matches at least nested_outer_share as well: a misparsed container
    # (a C++ macro read as a function around a whole class) does not sink what it holds.
    nested_factor: float = 0.7
    nested_outer_share: float = 0.5
    # Hits are read by file: a file's second unit tells less than the first of another file, so
    # each unit of a file already above costs this share of the best unit's relevance. A long
    # question asks for one function, often beside its file's best match: the cost shrinks as
    # (specific_words / words)**2 for a question of more content words than that.
    file_repeat: float = 0.08
    specific_words: int = 4
    # A short topical question ("plugin registration", "the handler stack") asks about a part of
    # the project, whose home is usually the file holding most code on it: each unit gains this
    # much times log(units in its file) / log(units in the largest candidate file), scaled down
    # for long questions as file_repeat is.
    central_file: float = 0.05


DEFAULT = Weights()
