"""The gzip body as one gzip stream: pieces compressed against the text before them, the CRC-32
combined, and the store's and self-metrics' bodies, after random changes, always decoding to the
plain body (zlib, Python's gzip command line; Prometheus reads it in tests/e2e/daemon/test_serving.py)."""

from __future__ import annotations

import gzip
import random
import subprocess
import sys
import zlib

import pytest

from fabric_exporter.serving import gzipstream, store as store_module
from fabric_exporter.serving.gzipstream import Segment, crc32_combine, deflate_piece, member
from fabric_exporter.samples import KeptSample, Sample
from fabric_exporter.scheduler import TargetState
from fabric_exporter.serving.selfmetrics import ReloadStatus, SelfMetrics
from fabric_exporter.serving.store import SnapshotStore, build_snapshot


def test_crc32_combine_equals_the_crc_of_the_concatenation():
    rng = random.Random(1)
    for length in [0, 1, 2, 3, 7, 8, 255, 256, 4095, 32768, 100_000, *(rng.randrange(1 << 20) for _ in range(20))]:
        a, b = rng.randbytes(rng.randrange(300)), rng.randbytes(length)
        assert crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)
    assert crc32_combine(0, 0, 0) == 0 and crc32_combine(zlib.crc32(b"x"), 0, 0) == zlib.crc32(b"x")


def test_crc32_combine_equals_zlibs_polynomial_method_at_any_length():
    """Lengths past what a test can CRC (up to 2^64, the x^(2^k) cycle of 32 wrapping): the table
    lookups give what zlib's crc32_combine computes, multiplying by x^(8 len2) modulo p(x)."""
    def zlib_method(crc1: int, crc2: int, len2: int) -> int:
        op, k = 1 << 31, 3  # x^0, then x^(2^k) for each bit of len2 (8 = 2^3 bits a byte)
        while len2:
            if len2 & 1:
                op = gzipstream._multmodp(gzipstream._X2N[k & 31], op)
            len2 >>= 1
            k += 1
        return gzipstream._multmodp(op, crc1) ^ crc2

    rng = random.Random(3)
    for bits in range(1, 65):
        for _ in range(20):
            crc1, crc2, len2 = rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(bits)
            assert crc32_combine(crc1, crc2, len2) == zlib_method(crc1, crc2, len2), (crc1, crc2, len2)


def _pieces(rng: random.Random) -> list[bytes]:
    lines = [f'fabric_roce_rx_bytes_total{{host="h{h}",port="{p}"}} {rng.random() * 1e12}\n'.encode()
             for h in range(rng.randrange(1, 40)) for p in range(rng.randrange(1, 6))]
    pieces, at = [], 0
    while at < len(lines):  # pieces of 1 to 20 lines, some empty, one far over deflate's 32 KiB window
        size = rng.choice([0, 1, 3, 20])
        pieces.append(b"".join(lines[at:at + size]))
        at += size
    pieces.append(rng.randbytes(40_000) + pieces[-1] * 500)
    return pieces


def _member_of(pieces: list[bytes]) -> bytes:
    segments, preceding = [], b""
    for text in pieces:
        segments.append(Segment(deflate_piece(text, preceding), zlib.crc32(text), len(text)))
        preceding = text or preceding
    return b"".join(member(segments))


@pytest.mark.parametrize("seed", range(20))
def test_pieces_compressed_against_their_predecessor_are_one_valid_gzip_stream(seed):
    pieces = _pieces(random.Random(seed))
    body = _member_of(pieces)
    plain = b"".join(pieces)
    assert gzip.decompress(body) == plain
    assert zlib.decompress(body, wbits=31) == plain
    one = zlib.decompressobj(wbits=31)
    assert one.decompress(body) == plain and one.eof and one.unused_data == b""  # one member, not several


def test_python_gzip_command_line_decodes_the_body(tmp_path):
    pieces = _pieces(random.Random(99))
    (tmp_path / "body.gz").write_bytes(_member_of(pieces))
    subprocess.run([sys.executable, "-m", "gzip", "-d", str(tmp_path / "body.gz")], check=True, timeout=60)
    assert (tmp_path / "body").read_bytes() == b"".join(pieces)


def test_a_piece_decoded_after_other_text_than_its_dictionary_is_caught_by_the_crc():
    """Why the predecessor is checked: a piece compressed after other text refers to bytes that are
    not there, and the stream says something else (the trailer's CRC then fails the read)."""
    one, other = b'x{host="a"} 1.0\n' * 3, b'x{host="b"} 2.0\n' * 3
    piece = deflate_piece(b'x{host="a"} 1.0\n', one)
    stale = b"".join(member([Segment(deflate_piece(other), zlib.crc32(other), len(other)),
                             Segment(piece, zlib.crc32(b'x{host="a"} 1.0\n'), 16)]))
    with pytest.raises((OSError, zlib.error)):
        gzip.decompress(stale)


def test_an_empty_body_is_no_member():
    assert member([]) == [] and member([Segment(b"", 0, 0)]) == []


def _samples(rng: random.Random, host: str) -> list:
    """A target's poll: RoCE counters (some ports, values moving or not) and, sometimes, IB state."""
    samples = []
    for port in range(rng.randrange(0, 4)):
        labels = {"host": host, "device": f"mlx5_{port}", "port": "1", "netdev": f"eth{port}"}
        samples.append(Sample("fabric_roce_rx_bytes_total", labels, rng.choice([1, 2, 1e12 * rng.random()])))
        if rng.random() < 0.5:
            samples.append(KeptSample("fabric_roce_tx_bytes_total", labels, rng.choice([5, 6])))
    if rng.random() < 0.3:
        samples.append(Sample("fabric_ib_topology_ports", {"state": rng.choice(["up", "down"])}, 3.0))
    return samples


@pytest.mark.parametrize("seed", range(8))
def test_store_gzip_body_equals_the_plain_body_after_random_changes(seed, monkeypatch):
    """Differential: random polls landing on random targets (families coming and going, text
    unchanged or not, empty polls), targets dropped and coming back, snapshots going stale and
    fresh again, scrapes at random times: the gzip body always decodes to the plain body, as one
    member, and a scrape between changes compresses nothing (it only joins)."""
    rng = random.Random(seed)
    store = SnapshotStore()
    hosts = [f"h{i:02d}" for i in range(rng.randrange(3, 25))]
    compressed: list = []
    original = store_module.deflate_piece
    monkeypatch.setattr(store_module, "deflate_piece", lambda *a: compressed.append(a) or original(*a))
    now = 0.0
    for _round in range(60):
        for host in rng.sample(hosts, rng.randrange(1, len(hosts) + 1)):
            key = ("g" if host < "h10" else "other", host)
            if rng.random() < 0.1:
                store.drop(key)
                continue
            monkeypatch.setattr(store_module.time, "monotonic", lambda: now)
            store.put(key, build_snapshot("f", _samples(rng, host), rng.choice([1, 5, 50]), now_mono=now,
                                          previous=store.get(key)))
        now += rng.choice([0.0, 0.5, 2, 10])
        for scrape_at in (now, now + rng.choice([0, 1, 3, 6, 60])):
            plain = b"".join(store.parts(scrape_at))
            one = zlib.decompressobj(wbits=31)
            body = b"".join(store.parts(scrape_at, gzip=True))
            assert one.decompress(body) == plain and one.unused_data == b""
            del compressed[:]
            assert b"".join(store.parts(scrape_at, gzip=True)) == body
            assert compressed == []  # the second scrape at that time: joins only


def test_a_scrape_compresses_nothing_after_polls_landed_in_any_order(monkeypatch):
    """put() leaves every fresh piece compressed against what precedes it: the scrape right after
    polls landed (in any order, some targets dropped, families coming and going) only joins."""
    rng = random.Random(5)
    store = SnapshotStore()
    keys = [("g", f"h{i:03d}") for i in range(60)]
    for _round in range(5):
        for key in rng.sample(keys, len(keys)):
            if rng.random() < 0.05:
                store.drop(key)
            else:
                store.put(key, build_snapshot("f", _samples(rng, key[1]), 3600, previous=store.get(key)))
        compressed: list = []
        original = store_module.deflate_piece
        monkeypatch.setattr(store_module, "deflate_piece", lambda *a: compressed.append(a) or original(*a))
        body = gzip.decompress(b"".join(store.parts(gzipstream_now(), gzip=True)))
        monkeypatch.setattr(store_module, "deflate_piece", original)
        assert compressed == [] and body == store.render()



def test_a_poll_that_moved_one_family_leaves_the_other_columns_joined(monkeypatch):
    """put() drops the joined gzip column of a family whose text changed, not of one whose text is
    the very same bytes: the scrape after a poll that moved only rx counters reads (CRC-32) the rx
    column again and none of the unchanged tx text, and its body is still the plain body."""
    store = SnapshotStore()
    keys = [("g", f"h{i}") for i in range(5)]

    def poll(host: str, rx: float) -> list:
        labels = {"host": host, "device": "mlx5_0", "port": "1", "netdev": "eth0"}
        return [Sample("fabric_roce_rx_bytes_total", labels, rx), KeptSample("fabric_roce_tx_bytes_total", labels, 7)]

    for key in keys:
        store.put(key, build_snapshot("f", poll(key[1], 1), 3600))
    b"".join(store.parts(gzipstream_now(), gzip=True))  # joins every column
    tx_texts = {store.get(k).chunks["fabric_roce_tx_bytes_total"] for k in keys}
    store.put(keys[2], build_snapshot("f", poll("h2", 2), 3600, previous=store.get(keys[2])))
    assert store.get(keys[2]).chunks["fabric_roce_tx_bytes_total"] in tx_texts  # the very bytes kept
    read: list = []
    original = store_module.zlib.crc32
    monkeypatch.setattr(store_module.zlib, "crc32", lambda data, *crc: read.append(data) or original(data, *crc))
    body = b"".join(store.parts(gzipstream_now(), gzip=True))
    monkeypatch.setattr(store_module.zlib, "crc32", original)
    assert gzip.decompress(body) == store.render()
    assert not any(text in tx_texts for text in read)
    assert store.get(keys[2]).chunks["fabric_roce_rx_bytes_total"] in read  # the moved column was joined again


def gzipstream_now() -> float:
    return store_module.time.monotonic()


@pytest.mark.parametrize("seed", range(6))
def test_self_metrics_gzip_body_equals_the_plain_body_after_random_changes(seed):
    """Differential: targets polled, failing, added and removed at random, their snapshots going
    stale and fresh again; every scrape's gzip body decodes to its plain body."""
    rng = random.Random(seed)
    metrics = SelfMetrics(ReloadStatus())
    states: dict = {}
    for _round in range(40):
        for _ in range(rng.randrange(1, 8)):
            host = f"h{rng.randrange(30):02d}"
            key = ("g", host)
            if key in states and rng.random() < 0.15:
                metrics.target_removed(key)
                del states[key]
                continue
            state = states.get(key) or TargetState("g", host, rng.choice(["roce_nic", "infiniband"]), "f",
                                                   "ssh", 30.0, 60.0)
            states[key] = state
            if rng.random() < 0.7:  # a poll landed
                state.polls += 1
                state.state = rng.choice(["ok", "failed", "partial"])
                state.samples = rng.randrange(100)
                state.last_duration = rng.random()
                state.last_poll_end = state.last_success = 1e9 + rng.random()
                state.errors["timeout"] += rng.randrange(2)
                if rng.random() < 0.2:
                    state.skipped_lines[rng.choice(["a", "b"])] = rng.randrange(5)
            metrics.target_changed(state, rng.choice([None, 10.0, 20.0 + _round]))
        for now in (rng.choice([0.0, 15.0, 30.0, 100.0]), rng.choice([5.0, 25.0])):
            one = zlib.decompressobj(wbits=31)
            assert one.decompress(b"".join(metrics.parts(now, gzip=True))) == metrics.render(now)
            assert one.eof and one.unused_data == b""


def test_the_body_is_smaller_than_gzip_members_per_piece():
    """The reason for all this: 200 targets' counters as one stream, not a member per target."""
    store = SnapshotStore()
    for i in range(200):
        samples = [Sample("fabric_roce_rx_bytes_total", {"host": f"gpu-{i:05d}", "device": f"mlx5_{d}", "port": "1",
                                                          "netdev": f"eth{d}"}, 1e9 + i * 7919 + d) for d in range(8)]
        store.put(("g", f"gpu-{i:05d}"), build_snapshot("f", samples, 60))
    body = b"".join(store.parts(gzipstream_now(), gzip=True))
    plain = store.render()
    per_piece = sum(len(zlib.compress(s.chunks[f], gzipstream.GZIP_LEVEL, wbits=31))
                    for s in map(store.get, [("g", f"gpu-{i:05d}") for i in range(200)]) for f in s.chunks)
    assert gzip.decompress(body) == plain
    assert len(body) < 0.6 * per_piece
    assert len(body) < 1.3 * len(gzip.compress(plain, gzipstream.GZIP_LEVEL))
