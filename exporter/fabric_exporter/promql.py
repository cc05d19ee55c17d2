"""One way to put a value into PromQL: ``quote`` (the report's queries, the mixin's rules and
dashboards, the promtool test series all call it).

A label value spliced into a query unescaped lets a fabric named ``a"b`` break every query, and one
named ``x"} or vector(1) or {y="`` change what the query computes. ``quote`` writes the value as a
double-quoted PromQL string that Prometheus's lexer reads back as exactly that value
(promql/parser/lex.go ``lexString``/``lexEscape``: a backslash starts an escape, ``"`` ends the
string, a raw newline is an error; escapes are Go's). With ``regex=True`` the value is first made a
literal RE2 pattern, for ``=~``/``!~`` matchers (Prometheus anchors the pattern itself).
"""

from __future__ import annotations

# Escapes Go's strconv.Unquote (and so PromQL) reads back; every other control character as \xNN.
_STRING_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# RE2's metacharacters; a backslash before any other ASCII punctuation would also be accepted.
_REGEX_META = frozenset("\\.+*?()|[]{}^$")


def quote(value: str, *, regex: bool = False) -> str:
    """``value`` as a double-quoted PromQL string literal (a regex matching only it if ``regex``)."""
    if not isinstance(value, str):
        raise TypeError(f"a PromQL label value must be a str, got {type(value).__name__}")
    try:
        value.encode("utf-8")  # Prometheus rejects invalid UTF-8 (a lone surrogate from a bad argv byte)
    except UnicodeEncodeError:
        raise ValueError(f"{value!r} is not valid UTF-8, so it cannot be a Prometheus label value") from None
    if regex:
        value = "".join("\\" + c if c in _REGEX_META else c for c in value)
    out = []
    for c in value:
        if c in _STRING_ESCAPES:
            out.append(_STRING_ESCAPES[c])
        elif c < " " or c == "\x7f":
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'
