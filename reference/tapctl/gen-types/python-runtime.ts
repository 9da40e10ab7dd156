/**
 * The fixed head of the generated Python module: its docstring, imports and the validation and
 * conversion helpers every generated dataclass calls (`tapctl gen-types --lang python`).
 */

/** The Python source that starts every generated module. */
export const HEADER = `"""TAP 1.0 message types, generated from schemas/v1 by \`tapctl gen-types --lang python\`. Do not edit.

parse_message_json(text) decodes one I-JSON text (loads refuses NaN, Infinity, integers beyond
±(2^53−1) and lone surrogates) and hands it to parse_message; dumps(msg) writes a message back.
parse_message(obj) takes a decoded JSON object, checks its \`type\` and returns an instance of
that message's class, after checking required members, basic types, enum values and the simple
constraints (pattern, length, range, item count). Unknown members are kept in \`extra\`.
An absent optional member is None, or ABSENT where JSON null is a value it can hold.
Conditional rules (if/then, not) are not checked here; validate against the JSON Schemas for those.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Literal, Optional, Union


class ValidationError(ValueError):
    """A value that does not match its schema; \`path\` is a JSON Pointer."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '/'}: {message}")
        self.path = path
        self.reason = message


_DATE_TIME = re.compile(r"^\\d{4}-\\d{2}-\\d{2}[Tt]\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?([Zz]|[+-]\\d{2}:\\d{2})$")


def _obj(v: Any, p: str) -> Dict[str, Any]:
    if not isinstance(v, dict):
        raise ValidationError(p, f"expected an object, got {type(v).__name__}")
    return v


def _require(o: Dict[str, Any], names: tuple, p: str) -> None:
    for n in names:
        if n not in o:
            raise ValidationError(p, f"missing required member {n!r}")


def _str(v: Any, p: str, pattern: Optional[re.Pattern] = None, min_length: Optional[int] = None,
         max_length: Optional[int] = None, fmt: Optional[str] = None) -> str:
    if not isinstance(v, str):
        raise ValidationError(p, f"expected a string, got {type(v).__name__}")
    if min_length is not None and len(v) < min_length:
        raise ValidationError(p, f"shorter than {min_length} characters")
    if max_length is not None and len(v) > max_length:
        raise ValidationError(p, f"longer than {max_length} characters")
    if pattern is not None and not pattern.search(v):
        raise ValidationError(p, f"does not match {pattern.pattern}")
    if fmt == "date-time" and not _DATE_TIME.match(v):
        raise ValidationError(p, "not an RFC 3339 date-time")
    return v


def _int(v: Any, p: str, minimum: Optional[float] = None, maximum: Optional[float] = None) -> int:
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValidationError(p, f"expected an integer, got {type(v).__name__}")
    return _range(v, p, minimum, maximum)


def _num(v: Any, p: str, minimum: Optional[float] = None, maximum: Optional[float] = None) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValidationError(p, f"expected a number, got {type(v).__name__}")
    if isinstance(v, float) and not math.isfinite(v):
        raise ValidationError(p, f"{v} is not a JSON number")
    return _range(v, p, minimum, maximum)


def _range(v: Any, p: str, minimum: Optional[float], maximum: Optional[float]) -> Any:
    if minimum is not None and v < minimum:
        raise ValidationError(p, f"less than {minimum}")
    if maximum is not None and v > maximum:
        raise ValidationError(p, f"greater than {maximum}")
    return v


def _bool(v: Any, p: str) -> bool:
    if not isinstance(v, bool):
        raise ValidationError(p, f"expected a boolean, got {type(v).__name__}")
    return v


def _null(v: Any, p: str) -> None:
    if v is not None:
        raise ValidationError(p, "expected null")
    return None


def _enum(v: Any, p: str, values: tuple) -> str:
    if v not in values or not isinstance(v, str):
        raise ValidationError(p, f"expected one of {', '.join(values)}")
    return v


def _list(v: Any, p: str, item: Callable[[Any, str], Any], min_items: Optional[int] = None,
          max_items: Optional[int] = None, unique: bool = False) -> list:
    if not isinstance(v, list):
        raise ValidationError(p, f"expected an array, got {type(v).__name__}")
    if min_items is not None and len(v) < min_items:
        raise ValidationError(p, f"fewer than {min_items} items")
    if max_items is not None and len(v) > max_items:
        raise ValidationError(p, f"more than {max_items} items")
    if unique and len({json.dumps(x, sort_keys=True) for x in v}) != len(v):
        raise ValidationError(p, "items repeat")
    return [item(x, f"{p}/{i}") for i, x in enumerate(v)]


def _map(v: Any, p: str, item: Callable[[Any, str], Any]) -> Dict[str, Any]:
    o = _obj(v, p)
    return {k: item(x, f"{p}/{_escape(k)}") for k, x in o.items()}


def _one_of(v: Any, p: str, *choices: Callable[[Any, str], Any]) -> Any:
    errors = []
    for choice in choices:
        try:
            return choice(v, p)
        except ValidationError as e:
            errors.append(e.reason)
    raise ValidationError(p, "matches none of the alternatives (" + "; ".join(errors) + ")")


class _Absent:
    """The value of an optional member that may hold JSON null when it is absent."""

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Any = _Absent()


def _escape(k: str) -> str:
    return k.replace("~", "~0").replace("/", "~1")


_MAX_SAFE = 9007199254740991
_SURROGATE = re.compile("[\\ud800-\\udfff]")


def _no_constant(name: str) -> Any:
    raise ValidationError("", f"{name} is not JSON")


def _safe_int(text: str) -> int:
    n = int(text)
    if abs(n) > _MAX_SAFE:
        raise ValidationError("", f"the integer {text} lies outside ±(2^53−1), so it is not I-JSON")
    return n


def _finite(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise ValidationError("", f"the number {text} does not fit a double, so it is not I-JSON")
    return x


def _unicode(v: Any, p: str) -> None:
    if isinstance(v, str):
        if _SURROGATE.search(v):
            raise ValidationError(p, "a lone surrogate is not Unicode text, so it is not I-JSON")
    elif isinstance(v, list):
        for i, x in enumerate(v):
            _unicode(x, f"{p}/{i}")
    elif isinstance(v, dict):
        for k, x in v.items():
            if _SURROGATE.search(k):
                raise ValidationError(p, "a member name holds a lone surrogate, so it is not I-JSON")
            _unicode(x, f"{p}/{_escape(k)}")


def loads(text: str) -> Any:
    """Decodes one I-JSON text (RFC 7493): no NaN or Infinity, integers within ±(2^53−1),
    numbers that fit a double, no lone surrogates. Raises ValidationError otherwise."""
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_int=_safe_int, parse_float=_finite)
    except json.JSONDecodeError as e:
        raise ValidationError("", f"not JSON: {e}") from None
    _unicode(value, "")
    return value


def dumps(value: Any) -> str:
    """Encodes a message (or any value to_dict gives) as one line of JSON, UTF-8 unescaped."""
    return json.dumps(_dump(value), ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _dump(v: Any) -> Any:
    if hasattr(v, "to_dict"):
        return v.to_dict()
    if isinstance(v, list):
        return [_dump(x) for x in v]
    if isinstance(v, dict):
        return {k: _dump(x) for k, x in v.items()}
    return v
`;
