"""`--output-schema FILE` (docs/explanation/rules.md#parallel-coding): the final report must be JSON valid for
a JSON Schema. Imports `zapcli.errors`, `zapcli.boundedread`; `jsonschema` lazily (only a spawn
with a schema and its runner pay for it). The text it checks is a subagent's
final one (`trail.reader.final_text`).

One reading of a report for everyone: the report is JSON as a whole
(whitespace or a bare ``` fence around it allowed), or exactly one Markdown
```json fence holds the JSON and text around that fence is ignored. The built-in agent is told the schema and gets the validation errors
back (at most `MAX_TRIES` answers in all); every backend's report is then
checked the same way by its runner, and `poll --json` carries the value.
"""

from __future__ import annotations

import json
import re
from typing import Any

from zapcli.errors import UsageError, param

REASON = "output schema"
MAX_TRIES = 3
MAX_SCHEMA_BYTES = 32 * 1024  # it travels in the spawn record and the prompt
MAX_ERRORS = 8


def given(value: str | dict[str, Any] | bool) -> dict[str, Any]:
    """The schema a spawn was given: a file's path, or the schema itself
    inline — an object, or its JSON text (a tool caller's, or `--output-schema
    '{...}'`). Raises UsageError (nothing is created)."""
    if isinstance(value, str) and not value.lstrip().startswith("{"):
        return load_schema(value)
    return inline_schema(value)


def inline_schema(value: Any) -> dict[str, Any]:
    """A schema given inline (an object, or its JSON text). Raises UsageError."""
    where = "the inline schema"
    if isinstance(value, str):
        if len(value.encode("utf-8", "surrogatepass")) > MAX_SCHEMA_BYTES:
            raise UsageError(f"{param('output_schema')}: {where} is larger than "
                             f"{MAX_SCHEMA_BYTES:,} bytes, the limit")
        try:
            value = _loads(value)
        except TooDeep:
            raise UsageError(f"{param('output_schema')}: {where} is {NESTED}{FEW}") from None
        except ValueError as exc:
            raise UsageError(f"{param('output_schema')}: {where} is not JSON: {exc}") from None
    else:
        try:
            size = len(json.dumps(value, default=str))
        except RecursionError:
            raise UsageError(f"{param('output_schema')}: {where} is {NESTED}{FEW}") from None
        if size > MAX_SCHEMA_BYTES:
            raise UsageError(f"{param('output_schema')}: {where} is larger than "
                             f"{MAX_SCHEMA_BYTES:,} bytes, the limit")
    return _checked(value, where)


def load_schema(path: str) -> dict[str, Any]:
    """Read and check a schema file. Raises UsageError (nothing is created)."""
    from zapcli.boundedread import larger_than, read_at_most

    try:
        raw = read_at_most(path, MAX_SCHEMA_BYTES)
    except OSError as exc:
        raise UsageError(f"{param('output_schema')} {path!r}: cannot read it ({exc.strerror or exc})") from None
    if len(raw) > MAX_SCHEMA_BYTES:
        raise UsageError(f"{param('output_schema')} {path!r} is larger than "
                         f"{larger_than(MAX_SCHEMA_BYTES)} ({MAX_SCHEMA_BYTES:,} bytes), the limit")
    try:
        schema = _loads(raw.decode("utf-8"))
    except TooDeep:
        raise UsageError(f"{param('output_schema')} {path!r} is {NESTED}{FEW}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{param('output_schema')} {path!r} is not JSON: {exc}") from None
    return _checked(schema, repr(path))


class TooDeep(ValueError):
    """JSON nested past the parser's own limit (its RecursionError)."""


NESTED = "nested too deeply (hundreds of levels)"
FEW = "; a JSON Schema for a report needs a few"


def _loads(text: str) -> Any:
    """`json.loads`, its nesting limit said as `TooDeep` (a ValueError), like
    any other reason the text is not usable JSON, never a RecursionError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise TooDeep(NESTED) from None


def _checked(schema: Any, where: str) -> dict[str, Any]:
    if not isinstance(schema, (dict, bool)):
        raise UsageError(f"{param('output_schema')} {where}: a JSON Schema is an object, got "
                         f"{type(schema).__name__}")
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        at = "/".join(str(p) for p in exc.path) or "(top level)"
        raise UsageError(f"{param('output_schema')} {where} is not a valid JSON Schema: at "
                         f"{at}: {exc.message}") from None
    except RecursionError:  # checking recurses per level, well before json.loads would refuse
        raise UsageError(f"{param('output_schema')} {where} is {NESTED}{FEW}") from None
    return schema  # type: ignore[return-value]


EXPECTED = ("expected bare JSON or one ```json fence holding it (text around the fence is "
            "allowed)")
# a ```json fence: its opening line, its content, a closing line of ``` alone
_JSON_FENCE = re.compile(r"^[ \t]*```[ \t]*json[ \t]*\r?\n(.*?)^[ \t]*```[ \t]*$", re.S | re.M | re.I)


def parse(text: str | None) -> tuple[Any, str | None]:
    """(the JSON value of a report, None) or (None, why it is not JSON).

    The report is JSON as a whole (a bare ``` fence around all of it too), or
    exactly one ```json fence holds it and any text around that is ignored."""
    if text is None or not text.strip():
        return None, "the final report is empty"
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and body.count("```") == 2:
        first, _, rest = body[3:-3].partition("\n")
        if first.strip() == "":
            body = rest
    try:
        return _loads(body), None
    except TooDeep:
        return None, f"the final report is JSON {NESTED}"
    except ValueError:
        pass
    fences = _JSON_FENCE.findall(text)
    if len(fences) > 1:
        return None, (f"the final report has {len(fences)} ```json fences; "
                      "expected bare JSON or exactly one ```json fence")
    if not fences:
        return None, f"the final report is not JSON: {EXPECTED}"
    try:
        return _loads(fences[0]), None
    except ValueError as exc:
        return None, f"the ```json fence of the final report does not hold valid JSON ({exc})"


def problems(schema: Any, value: Any) -> list[str]:
    """Validation errors of `value`, one line each, at most MAX_ERRORS."""
    from jsonschema.validators import validator_for

    validator = validator_for(schema)(schema)
    out = []
    for err in sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.path))):
        where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.path)
        out.append(f"at {where}: {err.message[:300]}")
        if len(out) >= MAX_ERRORS:
            break
    return out


def check(schema: Any, text: str | None) -> str | None:
    """None when `text` is JSON valid for `schema`, else one line saying why.
    Never raises."""
    value, why = parse(text)
    if why is not None:
        return why
    try:
        errs = problems(schema, value)
    except Exception as exc:  # a schema jsonschema cannot apply is a failure, not a crash
        return f"the schema could not be applied: {exc}"
    return "; ".join(errs) if errs else None


def structured(text: str | None) -> Any:
    """The parsed value of a `completed` subagent's report, else None. Only
    parsed: its runner validated it before it ended `completed` (under the
    deadline); validating again in a watching command would run a pattern
    that backtracks with no deadline at all."""
    return parse(text)[0]


def instructions(schema: Any) -> str:
    """What the built-in agent is told about its final answer."""
    return ("Your final answer (the message in which you call no tool) must be one JSON value, "
            "and nothing else, that is valid for this JSON Schema:\n"
            + json.dumps(schema, indent=1, ensure_ascii=False))


def feedback(why: str, tries_left: int) -> str:
    """The message that gives the model its validation errors back."""
    return (f"Your final answer does not satisfy the required output schema: {why}. Answer again "
            f"with only the corrected JSON ({tries_left} more tr{'y' if tries_left == 1 else 'ies'}).")
