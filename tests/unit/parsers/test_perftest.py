"""perftest latency report parser: real-layout captures, JSON, and fuzzing."""

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric_exporter.errors import ParseError
from fabric_exporter.lab.perftest import render_json, render_report
from fabric_exporter.parsers.perftest import parse_json, parse_report, parse_text

from tests.harness import paths

FIXTURES = paths.FIXTURES / "latency"


@pytest.fixture
def capture():
    def read(name: str) -> str:
        return (FIXTURES / name).read_text()
    return read


def test_ib_write_lat_capture(capture):
    (r,) = parse_text(capture("write_lat_ib.txt"))
    assert (r.message_bytes, r.iterations) == (2, 10000)
    assert (r.min_us, r.max_us, r.typical_us, r.avg_us, r.stdev_us, r.p99_us, r.p999_us) == (
        0.88, 6.84, 0.98, 1.03, 0.20, 1.21, 5.42)
    assert (r.test, r.device, r.link_type, r.warnings) == ("RDMA_Write Latency Test", "mlx5_0", "IB", ())


def test_roce_capture_with_interleaved_cpu_frequency_warnings(capture):
    (r,) = parse_text(capture("send_lat_roce_cpu_warning.txt"))
    assert (r.message_bytes, r.iterations, r.typical_us, r.p99_us, r.p999_us, r.max_us) == (64, 20000, 2.75, 3.32, 6.93, 14.87)
    assert r.link_type == "Ethernet" and r.device == "mlx5_2" and r.test == "Send Latency Test"
    assert sum("Conflicting CPU frequency" in w for w in r.warnings) == 3
    assert any("PCIe relaxed ordering" in w for w in r.warnings)


def test_glued_columns_are_split_on_the_two_decimals(capture):
    # soft-RoCE values fill %-7.2f, so t_stdev and the 99% column touch: "2465.901216.65"
    (r,) = parse_text(capture("send_lat_rxe_glued_columns.txt"))
    assert (r.stdev_us, r.p99_us, r.p999_us, r.max_us) == (2465.90, 1216.65, 37330.73, 37330.73)
    assert r.device == "rxe0"


def test_all_sizes_report_gives_one_row_per_size(capture):
    rows = parse_text(capture("read_lat_ib_all_sizes.txt"))
    assert [r.message_bytes for r in rows] == [2, 4, 8, 16]
    assert parse_report(capture("read_lat_ib_all_sizes.txt"), message_bytes=8).p999_us == 4.98
    with pytest.raises(ParseError, match="one data row"):
        parse_report(capture("read_lat_ib_all_sizes.txt"))
    with pytest.raises(ParseError, match="size 64"):
        parse_report(capture("read_lat_ib_all_sizes.txt"), message_bytes=64)


def test_out_json_file(capture):
    r = parse_json(capture("write_lat_roce_out_json.json"))
    assert (r.message_bytes, r.iterations, r.min_us, r.typical_us, r.p99_us, r.p999_us, r.max_us) == (
        2, 10000, 1.62, 1.71, 2.33, 4.87, 9.15)
    assert (r.link_type, r.device, r.test) == ("Ethernet", "mlx5_0", "RDMA_Write_Latency_Test")


def test_out_json_to_stdout_is_preferred_over_the_text_in_the_same_stream(capture):
    text = capture("write_lat_roce_json_stdout.txt")
    r = parse_report(text)
    assert r.test == "RDMA_Write_Latency_Test"  # the JSON's name, not the text title
    assert (r.typical_us, r.p999_us) == (1.71, 4.87)
    assert parse_text(text)[0].p999_us == 4.87  # and the text agrees


def test_duration_mode_is_refused(capture):
    with pytest.raises(ParseError, match="duration"):
        parse_text(capture("write_lat_duration_mode.txt"))


@pytest.mark.parametrize("text, match", [
    ("", "no latency data row"),
    ("Couldn't connect to 10.0.0.2:18515\nUnable to open file descriptor for socket connection\n", "header missing"),
    (" #bytes #iterations    t_min[cycles]    t_max[cycles]  t_typical[cycles]\n", "cycles"),
    (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
     "99% percentile[usec]   99.9% percentile[usec]\n 2 1000 1.00 2.00\n", "7 latency columns"),
    # max below p99.9: columns mangled, never a guessed value
    (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
     "99% percentile[usec]   99.9% percentile[usec]\n 2 1000 1.00 2.00 1.10 1.20 0.10 1.50 3.00\n", "out of order"),
    (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
     "99% percentile[usec]   99.9% percentile[usec]\n 2 1 1.00 2.00 1.10 1.20 0.10 1.50 1.90\n", "iteration"),
])
def test_bad_reports(text, match):
    with pytest.raises(ParseError, match=match):
        parse_report(text)


@pytest.mark.parametrize("results, match", [
    ({"MsgSize": 2, "n_iterations": 1000, "t_avg": 1.2, "tps_average": 400000.0}, "percentiles"),
    ({"MsgSize": 2, "n_iterations": 1000, "t_min": 1.0}, "lack"),
    ({"MsgSize": "2", "n_iterations": 1000, "t_min": 1.0, "t_max": 2.0, "t_typical": 1.1, "t_avg": 1.2,
      "t_stdev": 0.1, "percentile_99": 1.5, "percentile_99.9": 1.9}, "integer"),
    ({"MsgSize": 2, "n_iterations": 1000, "t_min": 1.0, "t_max": 2.0, "t_typical": 1.1, "t_avg": 1.2,
      "t_stdev": 0.1, "percentile_99": None, "percentile_99.9": 1.9}, "number"),
])
def test_bad_json(results, match):
    with pytest.raises(ParseError, match=match):
        parse_json(json.dumps({"test_info": {}, "results": results}))


stat_sets = st.lists(st.integers(0, 10**7), min_size=5, max_size=5).map(sorted).map(
    lambda v: {"min": v[0] / 100, "typical": v[1] / 100, "p99": v[2] / 100, "p999": v[3] / 100, "max": v[4] / 100,
               "avg": (v[1] + v[2]) / 200, "stdev": v[1] / 1000})


@settings(max_examples=150, deadline=None)
@given(stats=stat_sets, tool=st.sampled_from(["ib_write_lat", "ib_send_lat", "ib_read_lat"]),
       size=st.integers(1, 1 << 23), iters=st.integers(5, 10**8), roce=st.booleans())
def test_rendered_reports_round_trip(stats, tool, size, iters, roce):
    kw = dict(size=size, iters=iters, link_type="Ethernet" if roce else "IB", gid_index=3 if roce else None)
    for text in (render_report(tool, stats, **kw), render_json(tool, stats, **kw)):
        r = parse_report(text)
        assert (r.message_bytes, r.iterations) == (size, iters)
        for key, got in (("min", r.min_us), ("max", r.max_us), ("typical", r.typical_us), ("p99", r.p99_us),
                         ("p999", r.p999_us)):
            assert got == pytest.approx(round(stats[key], 2), abs=0.006)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=400))
def test_garbage_gives_parse_error_only(text):
    try:
        r = parse_report(text)
    except ParseError:
        return
    assert math.isfinite(r.max_us)  # anything accepted must be a well-formed report


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_captures_never_crash_or_invent(capture, data):  # capture() is stateless
    text = capture(data.draw(st.sampled_from(["write_lat_ib.txt", "send_lat_roce_cpu_warning.txt",
                                               "write_lat_roce_json_stdout.txt", "send_lat_rxe_glued_columns.txt"])))
    pos = data.draw(st.integers(0, len(text)))
    cut = data.draw(st.integers(0, 40))
    junk = data.draw(st.text(alphabet="0123456789. \t\n{}\"-#%[]:abc", max_size=20))
    mutated = text[:pos] + junk + text[pos + cut:]
    try:
        r = parse_report(mutated)
    except ParseError:
        return
    # Accepted: consistent statistics (the order check is what stops made-up values)
    if r.has_percentiles:
        assert r.min_us <= r.typical_us <= r.p99_us <= r.p999_us <= r.max_us
    else:  # a header cut to an older perftest's 3 columns: only what those columns say
        assert r.min_us <= r.typical_us <= r.max_us and r.p99_us is None and r.avg_us is None


def test_fuzz_does_not_hide_real_errors():
    with pytest.raises(ParseError):
        parse_report("{\"results\": [1, 2]}\n")


def test_older_perftest_three_columns_publishes_what_is_there():
    # perftest 2.x: t_min t_max t_typical only (see tests/fixtures/real for published captures)
    text = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
            " 2       1000          0.87           5.27         0.90   \n"
            "---------------------------------------------------------------------------------------\n")
    r = parse_report(text)
    assert (r.message_bytes, r.iterations, r.min_us, r.max_us, r.typical_us) == (2, 1000, 0.87, 5.27, 0.90)
    assert not r.has_percentiles and r.p99_us is None and r.p999_us is None and r.avg_us is None


def test_five_column_header_and_rows_that_do_not_fit():
    from fabric_exporter.parsers.perftest import parse_text
    skipped = []
    text = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]\n"
            " 2       1000          0.87           5.27         0.90             0.95           0.10\n"
            " an odd line inside the table\n")
    (r,) = parse_text(text, skipped=skipped)
    assert (r.avg_us, r.stdev_us, r.p99_us) == (0.95, 0.10, None)
    assert [(s.source, s.line_no) for s in skipped] == [("perftest", 3)]
    with pytest.raises(ParseError):  # 7 numbers under a 3-column header: not ours to guess
        parse_report(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
                     " 2 1000 0.87 5.27 0.90 0.95 0.10 1.00 2.00\n")


# -- the edges the mutation run (scripts/mutation perftest) found untested (issue 16) ----------------

IB = (FIXTURES / "write_lat_ib.txt").read_text()
ROW = next(line for line in IB.splitlines() if line.startswith(" 2 "))


def json_report(**results) -> str:
    r = {"MsgSize": 2, "n_iterations": 10000, "t_min": 1.0, "t_max": 9.0, "t_typical": 2.0, "t_avg": 2.0,
         "t_stdev": 0.1, "percentile_99": 3.0, "percentile_99.9": 5.0, **results}
    return json.dumps({"results": r}) + "\n"


def test_negative_latencies_are_refused_even_in_order():
    with pytest.raises(ParseError, match="finite and >= 0"):
        parse_json(json_report(t_min=-2.0, t_typical=-1.0, t_avg=-1.0, percentile_99=-0.5,
                                **{"percentile_99.9": -0.2}, t_max=-0.1))


def test_a_cpu_utilisation_column_is_ignored():
    (report,) = parse_text(IB.replace(ROW, ROW.rstrip() + "\t\t12.50"))
    assert (report.min_us, report.p999_us) == (0.88, 5.42)


def test_rows_after_the_closing_rule_are_not_read():
    text = IB.rstrip("\n") + "\n" + ROW.replace(" 2 ", " 4 ", 1) + "\n"
    assert [r.message_bytes for r in parse_text(text)] == [2]


@pytest.mark.parametrize("text", ["no json here\n", "{\"other\": 1}\n", "{not json\n"])
def test_json_without_results_is_a_parse_error(text):
    with pytest.raises(ParseError):
        parse_json(text)
