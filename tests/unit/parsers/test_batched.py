"""parsers/batched.py: one shell run's stdout cut into the sections of its commands. A marker that
does not pair up is a ParseError -- a section cut short is never read as a short table -- and the
text between the markers is exactly the command's output. (The round trip through a real shell is
tests/e2e/switch/test_switch_cli.py::test_batched_script_sections_roundtrip.)"""

from __future__ import annotations

import pytest

from fabric_exporter.errors import ParseError
from fabric_exporter.parsers.batched import split_sections

N = "c0ffee"


def sections(stdout: str) -> list[tuple[str, int, str]]:
    return [(s.name, s.exit_status, s.text) for s in split_sections(stdout, N)]


def test_sections_keep_name_status_and_exact_text():
    out = (f"motd noise before the first marker\n"
           f"@@{N} begin show a\nline 1\n\nline 3\n\n@@{N} end show a 0\n"
           f"between sections: ignored\n"
           f"@@{N} begin b\npartial line\n@@{N} end b 127\n"
           f"@@{N} begin empty\n\n@@{N} end empty -1\n")
    assert sections(out) == [("show a", 0, "line 1\n\nline 3\n"), ("b", 127, "partial line"), ("empty", -1, "")]


def test_no_output_is_no_sections():
    assert sections("") == []
    assert sections("just a banner\n") == []


def test_a_marker_with_another_nonce_is_command_output():
    out = f"@@{N} begin a\n@@deadbeef begin x\n@@deadbeef end x 0\n@@{N} end a 0\n"
    assert sections(out) == [("a", 0, "@@deadbeef begin x\n@@deadbeef end x 0")]


@pytest.mark.parametrize("out, why", [
    (f"@@{N} begin a\nx\n@@{N} begin b\ny\n@@{N} end b 0\n", "has no end marker"),
    (f"@@{N} end a 0\n", "unexpected end marker"),
    (f"@@{N} begin a\nx\n@@{N} end b 0\n", "unexpected end marker"),
    (f"@@{N} begin a\nx\n@@{N} end a\n", "unexpected end marker"),
    (f"@@{N} begin a\nx\n@@{N} end a 1000\n", "unexpected end marker"),
    (f"@@{N} begin a\nx\n@@{N} end a x0\n", "unexpected end marker"),
    (f"@@{N} begin a\nx\n@@{N} end a 0\n@@{N} end a 0\n", "unexpected end marker"),
    (f"@@{N} begin a\nx\n", "cut off"),
    (f"@@{N} begin a\nx\n@@{N} end a 0\n@@{N} begin b\n", "cut off"),
])
def test_markers_that_do_not_pair_up_are_refused(out, why):
    with pytest.raises(ParseError, match=why):
        split_sections(out, N)


def test_three_digit_and_negative_statuses_are_read_whole():
    out = f"@@{N} begin a\n@@{N} end a 255\n@@{N} begin b\n@@{N} end b -15\n"
    assert [s.exit_status for s in split_sections(out, N)] == [255, -15]
