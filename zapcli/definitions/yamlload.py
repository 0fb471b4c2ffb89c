"""Strict YAML composition with positions: syntax errors, tabs, alias bombs → Diagnostics.
Imports yaml and zapcli.definitions.model.

The result is the node tree (yaml.compose), never constructed Python objects,
so every later check can point at a line and column. Aliases are counted while
composing and the expanded size is measured with memoisation, so a nested-alias
("billion laughs") file is refused without ever being expanded.
"""

from __future__ import annotations

import re

import yaml

from zapcli.definitions.model import MAX_FILE_BYTES, Diagnostic

MAX_ALIASES = 32  # alias references per file
MAX_EXPANDED_NODES = 10_000  # nodes after expanding every alias


class AliasBudgetError(yaml.MarkedYAMLError):
    """Too many alias references: refused before anything is expanded."""


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that counts alias references while composing."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self.alias_count = 0

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        if self.check_event(yaml.AliasEvent):
            self.alias_count += 1
            if self.alias_count > MAX_ALIASES:
                mark = self.peek_event().start_mark
                raise AliasBudgetError(
                    None, None, f"more than {MAX_ALIASES} alias references (*name)", mark)
        return super().compose_node(parent, index)


_KEY_VALUE = re.compile(r"^(\s*(?:-\s+)?)([A-Za-z_][\w-]*)\s*:\s+(\S.*?)\s*$")


def _line(text: str, index: int) -> str:
    lines = text.splitlines()
    return lines[index] if 0 <= index < len(lines) else ""


def _quote_hint(text: str, mark: yaml.Mark | None) -> str:
    """`quote the value: key: "…"` when the error sits in a `key: value` line."""
    if mark is None:
        return ""
    match = _KEY_VALUE.match(_line(text, mark.line))
    if not match or match.group(3)[:1] in ("'", '"'):
        return ""
    key, value = match.group(2), match.group(3)
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'quote the value: {key}: "{escaped}"'


def _syntax_diagnostic(file: str, text: str, exc: yaml.YAMLError) -> Diagnostic:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
    problem = str(getattr(exc, "problem", None) or exc)
    context = getattr(exc, "context", None) or ""
    if isinstance(exc, AliasBudgetError):
        return Diagnostic(file, line, col, f"refused: {problem}, as in an alias bomb; "
                          "nothing was expanded", "write the values out instead of aliasing them")
    if "'\\t'" in problem:
        return Diagnostic(file, line, col, "a tab character where YAML allows only spaces",
                          "indent with spaces, never tabs")
    if mark is not None and "\t" in _line(text, mark.line)[: mark.column + 1] and "indent" in problem:
        return Diagnostic(file, line, col, f"YAML syntax error: {problem} (the line has a tab)",
                          "indent with spaces, never tabs")
    if "expected a single document" in context:
        return Diagnostic(file, line, col, "more than one YAML document (a second `---`)",
                          "keep one definition per file")
    if "found undefined alias" in problem:
        return Diagnostic(file, line, col, f"YAML syntax error: {problem}",
                          "a value starting with `*` is an alias: " + (
                              _quote_hint(text, mark) or "quote the value"))
    hint = _quote_hint(text, mark)
    if "mapping values are not allowed" in problem:
        message = "YAML syntax error: a second `: ` inside an unquoted value"
        hint = hint or 'quote values that contain ": "'
    else:
        message = f"YAML syntax error: {problem}" + (f" ({context}" if context else "")
        start = getattr(exc, "context_mark", None)
        if context and start is not None and mark is not None and start.line != mark.line:
            message += f" that starts at line {start.line + 1}, column {start.column + 1}"
            if "flow" in context:  # the mistake is where the bracket opened, not here
                hint = (f"close the bracket opened at line {start.line + 1}, column "
                        f"{start.column + 1}, or quote that value if the bracket is text: "
                        + (_quote_hint(text, start).removeprefix("quote the value: ") or "\"…\""))
        message += ")" if context else ""
    return Diagnostic(file, line, col, message, hint)


def _expanded_size(node: yaml.Node, memo: dict[int, int], active: set[int]) -> int:
    """Node count with aliases expanded, computed in O(distinct nodes). Raises ValueError
    on a recursive alias or when the count passes MAX_EXPANDED_NODES."""
    key = id(node)
    if key in memo:
        return memo[key]
    if key in active:
        raise ValueError("recursive alias")
    active.add(key)
    total = 1
    if isinstance(node, yaml.SequenceNode):
        for child in node.value:
            total += _expanded_size(child, memo, active)
            if total > MAX_EXPANDED_NODES:
                break
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            total += _expanded_size(k, memo, active) + _expanded_size(v, memo, active)
            if total > MAX_EXPANDED_NODES:
                break
    active.discard(key)
    if total > MAX_EXPANDED_NODES:
        raise ValueError(f"aliases expand to more than {MAX_EXPANDED_NODES} values")
    memo[key] = total
    return total


def compose_text(text: str, file: str) -> tuple[yaml.Node | None, list[Diagnostic]]:
    """Compose one YAML document into nodes. Returns (root or None, diagnostics).

    An empty document (nothing but whitespace or comments) returns (None, [a
    diagnostic]); a syntax error returns one diagnostic with 1-based line and
    column and, where it helps, a hint (quote the value, spaces not tabs).
    """
    if len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        return None, [Diagnostic(file, 0, 0, f"file is larger than {MAX_FILE_BYTES // 1024} KB",
                                 "a definition is a short YAML file")]
    loader = StrictLoader(text)
    try:
        root = loader.get_single_node()
    except RecursionError:
        return None, [Diagnostic(file, 1, 1, "nested too deeply", "a definition is a short, flat YAML file")]
    except yaml.YAMLError as exc:
        return None, [_syntax_diagnostic(file, text, exc)]
    finally:
        loader.dispose()
    if root is None:
        return None, [Diagnostic(file, 1, 1, "the file is empty",
                                 "a definition needs at least `name:` and `description:`")]
    try:
        _expanded_size(root, {}, set())
    except RecursionError:
        return None, [Diagnostic(file, 1, 1, "nested too deeply", "a definition is a short, flat YAML file")]
    except ValueError as exc:
        return None, [Diagnostic(file, root.start_mark.line + 1, root.start_mark.column + 1,
                                 f"refused: {exc}", "write the values out instead of aliasing them")]
    return root, []


def read_text(raw: bytes, file: str) -> tuple[str | None, list[Diagnostic]]:
    """Decode a definition file's bytes (UTF-8, BOM allowed); a diagnostic when it is not text."""
    if len(raw) > MAX_FILE_BYTES:
        return None, [Diagnostic(file, 0, 0, f"file is larger than {MAX_FILE_BYTES // 1024} KB",
                                 "a definition is a short YAML file")]
    try:
        return raw.decode("utf-8-sig"), []
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, [Diagnostic(file, line, column, "the file is not UTF-8 text",
                                 "save it as UTF-8")]
