"""PHP: PHPUnit's report."""

from __future__ import annotations

import re

from learning_memory.shared.runs.model import Found, Frame, Parse, mentions

_MARK = re.compile(
    r"^(?:Tests: \d+, Assertions: \d+|OK \(\d+ tests?, \d+ assertions?\)|PHPUnit \d)", re.MULTILINE
)
_SECTION = re.compile(r"^There (?:was|were) \d+ (?:errors?|failures?|risky tests?|warnings?):$", re.MULTILINE)
_ENTRY = re.compile(r"^\d+\) (\S+(?: with data set [^\n]+)?)$", re.MULTILINE)
_FRAME = re.compile(r"^([^\s:][^:\n]*\.php):\d+$", re.MULTILINE)
_TYPED = re.compile(r"^((?:[A-Z]\w*\\)*[A-Z]\w*(?:Error|Exception)): (.*)$")
_TOTALS = re.compile(r"^Tests: (\d+), Assertions: \d+((?:, \w+: \d+)*)\.?$", re.MULTILINE)
_OK = re.compile(r"^OK \((\d+) tests?, \d+ assertions?\)", re.MULTILINE)
_PART = re.compile(r"(\w+): (\d+)")


def parse_phpunit(text: str) -> Parse | None:
    if not mentions(text, "Tests: ", "OK (", "PHPUnit "):
        return None
    if not _MARK.search(text):
        return None
    found: list[Found] = []
    sections = list(_SECTION.finditer(text))
    for index, section in enumerate(sections):
        if "risky" in section.group(0) or "warning" in section.group(0):
            continue
        stop = _TOTALS.search(text, section.end())
        end = sections[index + 1].start() if index + 1 < len(sections) else len(text)
        end = stop.start() if stop and stop.start() < end else end
        entries = list(_ENTRY.finditer(text, section.end(), end))
        for number, entry in enumerate(entries):
            block = text[entry.end() : entries[number + 1].start() if number + 1 < len(entries) else end]
            lines: list[str] = []
            for line in block.strip("\n").splitlines():
                if not line.strip() or _FRAME.match(line):
                    break
                lines.append(line)
            typed = _TYPED.match(lines[0]) if lines else None
            error_type = typed.group(1).rsplit("\\", 1)[-1] if typed else None
            if typed:
                lines[0] = typed.group(2)
            frames = [Frame(path) for path in _FRAME.findall(block)][::-1]
            found.append(Found(entry.group(1), error_type, "\n".join(lines), frames))
    totals = _TOTALS.search(text)
    if totals is not None:
        parts = {key.lower(): int(value) for key, value in _PART.findall(totals.group(2))}
        failed = parts.get("errors", 0) + parts.get("failures", 0)
        other = parts.get("skipped", 0) + parts.get("incomplete", 0)
        return Parse("phpunit", found, int(totals.group(1)) - failed - other, failed)
    ok = _OK.search(text)
    return Parse("phpunit", found, int(ok.group(1)) if ok else None, 0 if ok else None)
