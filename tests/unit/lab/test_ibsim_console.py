"""The ibsim wrapper reads its ever-growing console and opensm logs incrementally (issue 25, item 8).

Before, ``IbsimFabric._wait_for`` re-read the whole log every 50 ms while waiting for a marker, and
the lab sends a console command every second: ~10 KB/s of log, reads reaching GB/s after a day and
the lab's RSS growing ~180 MB/h. Now each byte is read once, a marker split across two writes is
still found, and what is held in memory is bounded by one command's answer.
"""

from __future__ import annotations

import threading
import time
import tracemalloc

import pytest

from fabric_exporter.lab.ibsim import FatTree, IbsimFabric, LogFollower

from tests.harness.infiniband import needs_ibsim


def test_each_byte_of_a_growing_log_is_read_once(tmp_path):
    log = tmp_path / "console.log"
    follower = LogFollower(log)
    line = b"ibsim> PerformanceSet \"leaf-01\"[1] PortCounters.SymbolErrorCounter=3\n" * 150  # ~10 KB
    with open(log, "wb") as f:
        for n in range(2000):  # ~20 MB: what a lab writes in half an hour
            marker = f"# sync-{n}\n".encode()
            f.write(line + marker)
            f.flush()
            assert follower.poll(marker.strip()) is not None, n
            assert follower.poll(marker.strip()) is None  # consumed: the same marker is not found twice
    size = log.stat().st_size
    assert follower.bytes_read == size  # once each (the whole-file re-read was ~n^2/2: 20 GB here)
    assert len(follower.pending) <= 1  # the newline after the last marker


def test_a_marker_split_across_two_writes_is_found(tmp_path):
    log = tmp_path / "console.log"
    follower = LogFollower(log)
    with open(log, "wb") as f:
        f.write(b"answer line 1\n# syn")
        f.flush()
        assert follower.poll(b"# sync-7") is None
        f.write(b"c-7\nrest")
        f.flush()
        assert follower.poll(b"# sync-7") == b"answer line 1\n# sync-7"
    assert bytes(follower.pending) == b"\nrest"


def test_a_wait_with_no_text_wanted_holds_only_a_marker_tail(tmp_path):
    log = tmp_path / "opensm.log"
    follower = LogFollower(log)
    with open(log, "wb") as f:
        for _ in range(100):
            f.write(b"x" * 50_000 + b"SUBNET ")
            f.flush()
            assert follower.poll(b"SUBNET UP", keep_text=False) is None
            assert len(follower.pending) < len(b"SUBNET UP")
        f.write(b"UP\n")
        f.flush()
    assert follower.poll(b"SUBNET UP", keep_text=False) is not None  # split "SUBNET " | "UP" found


def test_wait_for_finds_a_marker_written_in_two_halves_while_it_waits(tmp_path):
    fabric = IbsimFabric(FatTree(spines=1, leaves=1, hcas_per_leaf=1, switch_ports=4), tmp_path)
    log = tmp_path / "some.log"
    log.write_bytes(b"")

    def writer():
        with open(log, "ab") as f:
            for part in (b"noise\nSUBN", b"ET UP\n"):
                time.sleep(0.2)  # several of _wait_for's looks between the halves
                f.write(part)
                f.flush()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        fabric._wait_for(log, b"SUBNET UP", 10, "the marker")  # noqa: SLF001 - the method under test
    finally:
        thread.join(5)
    assert fabric._follower(log).bytes_read == log.stat().st_size  # noqa: SLF001


@needs_ibsim
def test_console_commands_read_only_their_answers_and_hold_no_memory(tmp_path):
    with IbsimFabric(FatTree(spines=1, leaves=2, hcas_per_leaf=1, switch_ports=8), tmp_path) as fabric:
        console = fabric._follower(fabric._log)  # noqa: SLF001
        for _ in range(20):  # warm up (allocator, first reads)
            fabric.set_counter("leaf-01", 1, "SymbolErrorCounter", 1)
        tracemalloc.start()
        try:
            first = tracemalloc.take_snapshot()
            read_before, size_before = console.bytes_read, fabric._log.stat().st_size  # noqa: SLF001
            for n in range(300):  # five minutes of the lab's once-a-second command
                out = fabric.command(f'PerformanceSet "leaf-01"[1] PortCounters.SymbolErrorCounter={n}')
                assert "sync" not in out
            grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(first, "filename")
                        if s.traceback[0].filename.endswith("ibsim.py"))
        finally:
            tracemalloc.stop()
        written = fabric._log.stat().st_size - size_before  # noqa: SLF001
        assert written > 0
        assert console.bytes_read - read_before <= written  # each answer once (before: the whole log every look)
        assert len(console.pending) < 256
        assert grown < 16_384, grown  # nothing kept per command


@pytest.mark.parametrize("bad", [b"", b"\n"])
def test_an_empty_log_finds_nothing(tmp_path, bad):
    log = tmp_path / "x.log"
    log.write_bytes(bad)
    assert LogFollower(log).poll(b"SUBNET UP") is None
    assert LogFollower(tmp_path / "missing.log").poll(b"SUBNET UP") is None
