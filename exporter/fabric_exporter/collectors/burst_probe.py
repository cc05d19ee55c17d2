"""The burst sampler's reader: reads a fixed set of counters every window and reports their deltas.

This file is two things at once, so the local and the SSH sampler run the same code:

- imported by the exporter (``transport: local``, the NIC DaemonSet): ``Probe`` reads the counters
  in-process and the collector's asyncio task calls ``Probe.sample()`` on absolute-deadline ticks;
- sent whole as ``python3 -c <this file> fabric-burst ...`` over ONE long-lived SSH channel
  (``transport: ssh``): ``main()`` ticks with ``time.sleep`` to absolute deadlines and streams one
  compact line per window. The SSH guard pins this file's SHA-256 (deploy/ssh/fabric-exporter-ssh-guard).

Counters (columns) are named on the command line: ``hw/DEV/PORT/NAME`` (RDMA hw_counters, read by
``os.pread`` on a file descriptor kept open for the sampler's life: sysfs attributes are re-read
at offset 0, no open/close per window) and ``eth/NETDEV/NAME`` (the driver's ``ethtool -S``
statistics, read with ONE ``SIOCETHTOOL``/``ETHTOOL_GSTATS`` ioctl per netdev per window: an
unprivileged request, the same numbers ``ethtool -S`` prints without a process per window).
``--ethtool-dir DIR`` reads ``DIR/<netdev>`` (``ethtool -S`` text) instead of the ioctl: the lab's
and tests' fake NICs have no driver to ask (local sampler only; the guard refuses it unless its
``--allow-burst-ethtool-dir`` names the directory).

Protocol (stdout, one line each; integers only)::

    @@fabric-burst 1 WINDOW_US NCOLUMNS ORIGIN_US   (ORIGIN: the host's monotonic clock at tick 0)
    m I REASON                  column I cannot be read (absent counter); it reports nothing
    w SEQ ELAPSED_US LATE_US [I:DELTA ...]   one window: tick number, time since the previous
                                read, how late the tick woke, the non-zero deltas
    @@error TEXT                the probe stops (e.g. every column failed)

A tick that wakes more than a window late skips the missed tick numbers (SEQ jumps; the reader
counts them) and its window simply lasts longer: deltas are never dropped, so the windows' deltas
always sum to the counter's change. A counter that goes down was reset (driver reload): the delta
is the new value (what was counted since the reset).

Python >= 3.6 standard library only (it runs on the GPU hosts' own python3).
"""

import array
import fcntl
import os
import socket
import struct
import sys
import time

SIOCETHTOOL = 0x8946
ETHTOOL_GSTRINGS = 0x1B
ETHTOOL_GSTATS = 0x1D
ETHTOOL_GSSET_INFO = 0x37
ETH_SS_STATS = 1
ETH_GSTRING_LEN = 32
MAX_STATS = 1 << 16


def _ifreq(netdev, buf):
    """struct ifreq {char ifr_name[16]; void *ifr_data;} pointing at ``buf`` (an array)."""
    address = buf.buffer_info()[0]
    return struct.pack("16sP", netdev.encode()[:15], address)


def _ioctl(sock, netdev, buf):
    fcntl.ioctl(sock.fileno(), SIOCETHTOOL, _ifreq(netdev, buf))


class EthtoolIoctl:
    """One netdev's ``ethtool -S`` statistics by ioctl: names once (GSSET_INFO + GSTRINGS), then one
    GSTATS per read into a preallocated buffer."""

    def __init__(self, netdev, sock):
        self.netdev = netdev
        self.sock = sock
        info = array.array("B", struct.pack("IIQI", ETHTOOL_GSSET_INFO, 0, 1 << ETH_SS_STATS, 0))
        _ioctl(sock, netdev, info)
        _, _, mask, count = struct.unpack("IIQI", info.tobytes())
        if not mask & (1 << ETH_SS_STATS) or count > MAX_STATS:
            raise OSError("%s: no ethtool statistics" % netdev)
        strings = array.array("B", struct.pack("III", ETHTOOL_GSTRINGS, ETH_SS_STATS, count)
                              + bytes(count * ETH_GSTRING_LEN))
        _ioctl(sock, netdev, strings)
        raw = strings.tobytes()[12:]
        self.names = [raw[i * ETH_GSTRING_LEN:(i + 1) * ETH_GSTRING_LEN].split(b"\0", 1)[0].decode(errors="replace")
                      for i in range(count)]
        self.count = count
        self._buf = array.array("B", struct.pack("II", ETHTOOL_GSTATS, count) + bytes(8 * count))

    def values(self):
        """The raw u64 array of the last read (positions as ``names``)."""
        _ioctl(self.sock, self.netdev, self._buf)
        return struct.unpack_from("%dQ" % self.count, self._buf, 8)


class EthtoolText:
    """``ethtool -S`` text in ``DIR/<netdev>`` (the lab's fake NICs), read by pread on a kept-open fd."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_RDONLY)
        self.names = [name for name, _ in self._parse()]

    def _parse(self):
        data = os.pread(self.fd, 1 << 20, 0)
        out = []
        for line in data.decode(errors="replace").splitlines():
            name, sep, value = line.strip().rpartition(":")
            if sep and name and value.strip().isdigit():
                out.append((name.strip(), int(value)))
        return out

    def values(self):
        return [v for _, v in self._parse()]

    def close(self):
        os.close(self.fd)


class Probe:
    """The columns' current values, and each window's deltas."""

    def __init__(self, columns, sysfs="/sys", ethtool_dir=None):
        self.columns = list(columns)
        self.missing = {}  # column index -> reason
        self._hw = []  # (column index, fd)
        self._eth = []  # (source, [(column index, position)])
        self._sock = None
        by_netdev = {}
        for i, col in enumerate(self.columns):
            parts = col.split("/")
            if parts[0] == "hw" and len(parts) == 4:
                path = os.path.join(sysfs, "class/infiniband", parts[1], "ports", parts[2], "hw_counters", parts[3])
                try:
                    fd = os.open(path, os.O_RDONLY)
                    _read_fd(fd)
                    self._hw.append((i, fd))
                except (OSError, ValueError) as e:
                    self.missing[i] = "%s: %s" % (path, getattr(e, "strerror", None) or e)
            elif parts[0] == "eth" and len(parts) == 3:
                by_netdev.setdefault(parts[1], []).append((i, parts[2]))
            else:
                self.missing[i] = "not a column: %s" % col
        for netdev, wanted in sorted(by_netdev.items()):
            try:
                if ethtool_dir is not None:
                    source = EthtoolText(os.path.join(ethtool_dir, netdev))
                else:
                    if self._sock is None:
                        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    source = EthtoolIoctl(netdev, self._sock)
            except OSError as e:
                for i, _ in wanted:
                    self.missing[i] = "ethtool %s: %s" % (netdev, e.strerror or e)
                continue
            position = {name: k for k, name in enumerate(source.names)}
            picked = []
            for i, name in wanted:
                if name in position:
                    picked.append((i, position[name]))
                else:
                    self.missing[i] = "ethtool %s: no counter %s" % (netdev, name)
            if picked:
                self._eth.append((source, picked))
        self.last = [0] * len(self.columns)
        self.read_into(self.last)
        self.last_time = time.monotonic()

    def read_into(self, out):
        pread = os.pread
        for i, fd in self._hw:
            data = pread(fd, 64, 0)
            try:
                out[i] = int(data)  # "123\n": int() takes the surrounding whitespace
            except ValueError:
                out[i] = _read_fd(fd)
        for source, picked in self._eth:
            values = source.values()
            for i, k in picked:
                out[i] = values[k] if k < len(values) else out[i]

    def sample(self):
        """(elapsed seconds since the previous read, {column: delta}) -- non-zero deltas only."""
        now_values = list(self.last)
        self.read_into(now_values)
        now = time.monotonic()
        elapsed, self.last_time = now - self.last_time, now
        last = self.last
        deltas = {i: (v - last[i] if v > last[i] else v)  # down: reset; count from zero
                  for i, v in enumerate(now_values) if v != last[i]}
        self.last = now_values
        return elapsed, deltas

    def close(self):
        for _, fd in self._hw:
            os.close(fd)
        for source, _ in self._eth:
            if hasattr(source, "close"):
                source.close()
        if self._sock is not None:
            self._sock.close()


def _read_fd(fd):
    data = os.pread(fd, 64, 0)
    return int(data.split(b"\n", 1)[0].strip() or b"0")


def main(argv):
    """python3 -c <this file> fabric-burst WINDOW_MS [--ethtool-dir DIR] COLUMN..."""
    args = list(argv)
    if len(args) < 2 or args[0] != "fabric-burst":
        sys.stderr.write("usage: fabric-burst WINDOW_MS [--ethtool-dir DIR] COLUMN...\n")
        return 2
    window = int(args[1]) / 1000.0
    rest = args[2:]
    ethtool_dir = None
    if rest[:1] == ["--ethtool-dir"] and len(rest) >= 2:
        ethtool_dir, rest = rest[1], rest[2:]
    if window < 0.01:
        sys.stderr.write("window below 10 ms\n")
        return 2
    out = sys.stdout
    probe = Probe(rest, ethtool_dir=ethtool_dir)
    seq = 0
    origin = time.monotonic()
    next_tick = origin + window
    out.write("@@fabric-burst 1 %d %d %d\n" % (int(window * 1e6), len(rest), int(origin * 1e6)))
    for i, reason in sorted(probe.missing.items()):
        out.write("m %d %s\n" % (i, reason.replace("\n", " ")))
    out.flush()
    if len(probe.missing) == len(rest):
        out.write("@@error no column can be read\n")
        out.flush()
        return 1
    try:
        while True:
            delay = next_tick - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            late = time.monotonic() - next_tick
            skipped = int(late // window) if late > 0 else 0
            seq += 1 + skipped
            next_tick += (1 + skipped) * window
            elapsed, deltas = probe.sample()
            out.write("w %d %d %d%s\n" % (seq, int(elapsed * 1e6), int(max(0.0, late) * 1e6),
                                          "".join(" %d:%d" % kv for kv in sorted(deltas.items()))))
            out.flush()
    except (BrokenPipeError, KeyboardInterrupt):  # the exporter closed the channel
        return 0
    except (OSError, ValueError) as e:  # a device went away (driver reload): the exporter restarts us
        try:
            out.write("@@error %s\n" % str(e).replace("\n", " "))
            out.flush()
        except OSError:
            pass
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
