"""The parsers' error promise (parsers/guard.py), pinned where scripts/mutation guard found it
unpinned (issue 16).

``parser_entry`` is tested on small entry points doing the very conversions it guards against
(CPython's int() digit limit, float() of a huge int), and on a real parser: only ParseError may
escape for those, while any other ValueError is a bug and must stay visible as one.
"""

from __future__ import annotations

import sys

import pytest

from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import ib_diagnet
from fabric_exporter.parsers.guard import parser_entry


@parser_entry
def _decimal(text: str) -> int:
    return int(text)


@parser_entry
def _as_float(text: str) -> float:
    return float(int(text))


@parser_entry
def _refuse(text: str) -> int:
    raise ParseError(f"refused {text!r}")


@parser_entry
def _bug(text: str) -> int:
    raise ValueError(f"not a conversion problem: {text}")


def test_a_good_value_passes_through_unchanged():
    assert _decimal("12345") == 12345
    assert _as_float("7") == 7.0
    assert _decimal.__name__ == "_decimal"  # functools.wraps: the entry point keeps its name


def test_more_digits_than_int_accepts_becomes_a_parse_error():
    limit = sys.get_int_max_str_digits()
    if limit == 0:
        pytest.skip("this interpreter has no int() digit limit")
    assert _decimal("9" * limit) == int("9" * limit)
    with pytest.raises(ParseError, match="4300 digits"):
        _decimal("9" * (limit + 1))


def test_a_number_too_large_for_float_becomes_a_parse_error():
    with pytest.raises(ParseError, match="out of range"):
        _as_float("9" * 400)


def test_a_parse_error_escapes_as_itself():
    with pytest.raises(ParseError, match="refused 'x'"):
        _refuse("x")


def test_other_value_errors_are_not_disguised_as_parse_errors():
    with pytest.raises(ValueError, match="not a conversion problem") as caught:
        _bug("y")
    assert not isinstance(caught.value, ParseError)
    with pytest.raises(ValueError) as caught:
        _decimal("twelve")  # int()'s own complaint, not the digit limit
    assert not isinstance(caught.value, ParseError)


def test_real_parser_raises_parse_error_not_none():
    with pytest.raises(ParseError):
        ib_diagnet.parse_pm("Port=1 Lid=0x1 GUID=0x1 Device=1 Port Name=x\nport_xmit_data=0xZZ\n")
