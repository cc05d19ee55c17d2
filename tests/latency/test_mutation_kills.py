"""Tests written for mutants that survived the perftest parser tests (issue 16, "Test strength")."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabric_exporter.errors import ParseError
from fabric_exporter.parsers import perftest

IB = (Path(__file__).resolve().parents[1] / "fixtures" / "latency" / "write_lat_ib.txt").read_text()
ROW = next(line for line in IB.splitlines() if line.startswith(" 2 "))


def json_report(**results) -> str:
    r = {"MsgSize": 2, "n_iterations": 10000, "t_min": 1.0, "t_max": 9.0, "t_typical": 2.0, "t_avg": 2.0,
         "t_stdev": 0.1, "percentile_99": 3.0, "percentile_99.9": 5.0, **results}
    import json
    return json.dumps({"results": r}) + "\n"


def test_negative_latencies_are_refused_even_in_order():
    with pytest.raises(ParseError, match="finite and >= 0"):
        perftest.parse_json(json_report(t_min=-2.0, t_typical=-1.0, t_avg=-1.0, percentile_99=-0.5,
                                        **{"percentile_99.9": -0.2}, t_max=-0.1))


def test_a_cpu_utilisation_column_is_ignored():
    (report,) = perftest.parse_text(IB.replace(ROW, ROW.rstrip() + "\t\t12.50"))
    assert (report.min_us, report.p999_us) == (0.88, 5.42)


def test_rows_after_the_closing_rule_are_not_read():
    text = IB.rstrip("\n") + "\n" + ROW.replace(" 2 ", " 4 ", 1) + "\n"
    assert [r.message_bytes for r in perftest.parse_text(text)] == [2]


@pytest.mark.parametrize("text", ["no json here\n", "{\"other\": 1}\n", "{not json\n"])
def test_json_without_results_is_a_parse_error(text):
    with pytest.raises(ParseError):
        perftest.parse_json(text)
