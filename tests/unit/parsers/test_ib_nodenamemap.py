"""parsers/ib_nodenamemap.py: every branch of the --node-name-map format (first written for mutants that
survived scripts/mutation ib_nodenamemap)."""

from __future__ import annotations

import pytest

from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import ib_nodenamemap


def test_guid_literals_in_every_c_base():
    names = ib_nodenamemap.parse('0x0002C90300A10000 "hex"\n0X1a "hex-upper"\n0755 "octal"\n12345 "decimal"\n'
                                 '0 "zero"\n0xffffffffffffffff "max"\n')
    assert names == {0x0002C90300A10000: "hex", 0x1A: "hex-upper", 0o755: "octal", 12345: "decimal", 0: "zero",
                     (1 << 64) - 1: "max"}


@pytest.mark.parametrize("guid", ["0xzz", "09", "0x", "abc", "0x10000000000000000", "-5", "18446744073709551616"])
def test_bad_or_out_of_range_guids_are_refused(guid):
    with pytest.raises(ParseError):
        ib_nodenamemap.parse(f'{guid} "n"\n')


def test_comments_blank_lines_and_name_forms():
    text = ('# leaf switches\n\n   \n   # indented comment\n'
            '0x1 "leaf b2"   # trailing comment\n'
            '0x2 "a#b"\n'
            '0x3\t\tgpu-001        # unquoted: up to the comment\n'
            '0x5 "x" "y"\n')
    assert ib_nodenamemap.parse(text) == {1: "leaf b2", 2: "a#b", 3: "gpu-001", 5: "x"}


def test_a_later_line_for_the_same_guid_wins():
    assert ib_nodenamemap.parse('0x1 "old"\n0x1 "new"\n') == {1: "new"}


@pytest.mark.parametrize(("text", "line"), [
    ('0x1 "ok"\n# c\n0x2 "unterminated\n', 3),
    ('0x1 "ok"\n0x2\n', 2),
    ('0x1 ""\n', 1),
    ('0x1   # only a comment\n', 1),
    ('0x1 "tab\tinside"\n', 1),
    ('0x1 "unit\x1fsep"\n', 1),
])
def test_bad_names_are_refused_with_their_line_number(text, line):
    with pytest.raises(ParseError, match=f"^line {line}:"):
        ib_nodenamemap.parse(text)


def test_an_empty_quoted_name_is_reported_as_missing_not_unterminated():
    with pytest.raises(ParseError, match=r"^line 2: missing"):
        ib_nodenamemap.parse('0x1 "ok"\n0x2 ""\n')


def test_a_name_may_hold_spaces_and_printable_punctuation():
    assert ib_nodenamemap.parse('0x1 " !~ x"\n') == {1: " !~ x"}


def test_non_text_is_refused():
    with pytest.raises(ParseError):
        ib_nodenamemap.parse(b'0x1 "n"\n')
