"""A fake perftest (``ib_write_lat`` / ``ib_send_lat`` / ``ib_read_lat``) for tests, benches and the lab.

It behaves like perftest where the collector can tell: the server listens on ``-p PORT`` and waits
for one client (for ever: only the ``timeout`` wrapper ends it), the client connects once (no
retry; ``Couldn't connect to HOST:PORT`` on failure, as perftest prints), and both print perftest's
report layout (the same printf formats as perftest's ``print_report_lat``), optionally with the
CPU-frequency warning on stderr and a ``--out_json`` file.

Which host a process runs on comes from ``SSH_CONNECTION`` (the address the SSH client dialled),
so one sshd listening on several loopback addresses emulates several hosts. Latencies come from a
fixture (JSON, path in ``FABRIC_LAB_PERFTEST_FIXTURE``)::

    {"hosts": {"127.0.1.1": "gpu-001", ...},              # address -> host name
     "default": {"typical": 2.1, "p99": 2.9, ...},       # µs; missing stats are derived
     "pairs": {"gpu-001>gpu-002": {"typical": 9.0} | {"behaviour": "hang" | "fail" | "garbage" | "vanish"
                                                     | "three_columns"}},  # perftest 2.x report layout
     "cpu_warning": true}

Every start and end is appended as a JSON line to ``$FABRIC_LAB_PERFTEST_STATE/events.jsonl`` and
a server keeps ``server-<port>.pid`` there while it runs, so tests can check ports, concurrency and
clean-up from the outside. Only the standard library is imported: each probe starts two of these.
"""

from __future__ import annotations

import json
import os
import random
import socket
import sys
import time
from pathlib import Path

PROGRAMS = ("ib_write_lat", "ib_send_lat", "ib_read_lat")
_TITLES = {"ib_write_lat": "RDMA_Write", "ib_send_lat": "Send", "ib_read_lat": "RDMA_Read"}
RESULT_LINE = "-" * 87 + "\n"
# perftest_parameters.h, RESULT_FMT_LAT / REPORT_FMT_LAT (tabs and spaces exactly as perftest has them)
RESULT_FMT_LAT = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
                  "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ")
CPU_WARNING = "Conflicting CPU frequency values detected: 1497.883000 != 3400.012000. CPU Frequency is not max.\n"
STAT_KEYS = ("min", "max", "typical", "avg", "stdev", "p99", "p999")


def c_left(value: float, width: int = 7) -> str:
    """C's ``%-7.2f``."""
    return f"{value:<{width}.2f}"


def report_row(size: int, iters: int, stats: dict) -> str:
    """One data row, formatted as perftest's REPORT_FMT_LAT followed by REPORT_EXT."""
    s = stats
    return (f" {size:<7d} {iters}          {c_left(s['min'])}        {c_left(s['max'])}      "
            f"{c_left(s['typical'])}  \t       {c_left(s['avg'])}     \t{c_left(s['stdev'])}\t\t"
            f"{c_left(s['p99'])} \t\t{c_left(s['p999'])}\n")


def complete_stats(partial: dict) -> dict:
    """Fill missing statistics so the set is consistent (min <= typical <= p99 <= p99.9 <= max)."""
    s = dict(partial)
    typical = float(s.get("typical", 2.0))
    s.setdefault("typical", typical)
    s.setdefault("min", round(typical * 0.9, 2))
    s.setdefault("p99", round(max(typical * 1.3, s["typical"]), 2))
    s.setdefault("p999", round(max(typical * 2.5, s["p99"]), 2))
    s.setdefault("max", round(max(typical * 6.0, s["p999"]), 2))
    s.setdefault("avg", round(min(max(typical * 1.05, s["min"]), s["max"]), 2))
    s.setdefault("stdev", round(typical * 0.1, 2))
    return {k: float(s[k]) for k in STAT_KEYS}


def render_banner(tool: str, *, role: str, device: str, link_type: str, gid_index: int | None,
                  mtu: int = 4096) -> str:
    """perftest's ``ctx_print_test_info`` block for a latency test."""
    verb = _TITLES[tool]
    lines = [RESULT_LINE, f"                    {verb} Latency Test\n",
             f" Dual-port       : OFF\t\tDevice         : {device}\n",
             " Number of qps   : 1\t\tTransport type : IB\n",
             " Connection type : RC\t\tUsing SRQ      : OFF\n",
             " PCIe relax order: ON\t\tLock-free      : OFF\n",
             " ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF\n"]
    if role == "client":
        lines.append(" TX depth        : 1\n")
    if tool == "ib_send_lat" and role == "server":
        lines.append(" RX depth        : 512\n")
    lines += [f" Mtu             : {mtu}[B]\n", f" Link type       : {link_type}\n"]
    if gid_index is not None:
        lines.append(f" GID index       : {gid_index}\n")
    lines.append(" Outstand reads  : 16\n" if tool == "ib_read_lat" else " Max inline data : 220[B]\n")
    lines += [" rdma_cm QPs\t : OFF\n", " Data ex. method : Ethernet\n", RESULT_LINE]
    if link_type == "Ethernet":
        lines += [" local address: LID 0000 QPN 0x0108 PSN 0x63ad7d RKey 0x17eedf VAddr 0x007f760c947000\n",
                  " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:05\n",
                  " remote address: LID 0000 QPN 0x0076 PSN 0xf3810c RKey 0x201600 VAddr 0x007fbb4c981000\n",
                  " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:00:04\n"]
    else:
        lines += [" local address: LID 0x02 QPN 0x0032 PSN 0x5f2841 RKey 0x002440 VAddr 0x007f2e5f64b000\n",
                  " remote address: LID 0x01 QPN 0x003a PSN 0xc0fd7e RKey 0x002442 VAddr 0x007f443b2f8000\n"]
    lines.append(RESULT_LINE)
    return "".join(lines)


def render_report(tool: str, stats: dict, *, size: int = 2, iters: int = 10000, role: str = "client",
                  device: str = "mlx5_0", link_type: str = "IB", gid_index: int | None = None) -> str:
    """The whole stdout of a latency run: banner, header, one row, closing rule."""
    return (render_banner(tool, role=role, device=device, link_type=link_type, gid_index=gid_index)
            + RESULT_FMT_LAT + "\n" + report_row(size, iters, complete_stats(stats)) + RESULT_LINE)


def render_json(tool: str, stats: dict, *, size: int = 2, iters: int = 10000, device: str = "mlx5_0",
                link_type: str = "IB", gid_index: int | None = None) -> str:
    """The ``--out_json`` file, as perftest's write_test_info_to_file + write_report_lat_to_file write it."""
    s = complete_stats(stats)
    verb = _TITLES[tool]
    info = [f'"test": "{verb}_Latency_Test",', '"Dual_port": "OFF",', f'"Device": "{device}",',
            '"Number_of_qps": 1,', '"Transport_type": "IB",', '"Connection_type": "RC",', '"Using_SRQ": "OFF",',
            '"PCIe_relax_order": "ON",', '"ibv_wr_API": "ON",', '"TX_depth": 1,', '"Mtu": 4096,',
            f'"Link_type": "{link_type}",']
    if gid_index is not None:
        info.append(f'"GID_index": {gid_index},')
    info += ['"Max_inline_data": 220,', '"rdma_cm_QPs": "OFF",', '"Use_ROCm_memory": "OFF",',
             '"Use_MUSA_memory": "OFF",', '"Data_ex_method": "Ethernet"']
    results = (f'"MsgSize": {size},\n"n_iterations": {iters},\n"t_min": {s["min"]:.2f},\n"t_max": {s["max"]:.2f},\n'
               f'"t_typical": {s["typical"]:.2f},\n"t_avg": {s["avg"]:.2f},\n"t_stdev": {s["stdev"]:.2f},\n'
               f'"percentile_99": {s["p99"]:.2f},\n"percentile_99.9": {s["p999"]:.2f}\n')
    return "{\n\"test_info\": {\n" + "\n".join(info) + "\n},\n\"results\": {\n" + results + "}\n}\n"


# ---------------------------------------------------------------------------------------------
# The fake program


def _parse_args(argv: list[str]) -> dict:
    """The perftest flags the collector passes; anything else is accepted and ignored."""
    opts = {"argv": list(argv), "port": 18515, "iters": 1000, "size": 2, "device": "mlx5_0", "gid_index": None, "server": None,
            "out_json": False, "out_json_file": "perftest_out.json", "no_cpu_warning": False}
    takes_value = {"-p": "port", "--port": "port", "-n": "iters", "--iters": "iters", "-s": "size", "--size": "size",
                   "-d": "device", "--ib-dev": "device", "-x": "gid_index", "--gid-index": "gid_index",
                   "-i": None, "--ib-port": None, "-S": None, "--sl": None, "--tclass": None, "-m": None,
                   "--out_json_file": "out_json_file"}
    i = 0
    while i < len(argv):
        arg = argv[i]
        key, _, inline = arg.partition("=")
        if key in takes_value:
            value = inline if inline else (argv[i + 1] if i + 1 < len(argv) else "")
            i += 1 if inline else 2
            name = takes_value[key]
            if name in ("port", "iters", "size", "gid_index"):
                opts[name] = int(value)
            elif name:
                opts[name] = value
            continue
        if arg == "--out_json":
            opts["out_json"] = True
        elif arg in ("-F", "--CPU-freq"):
            opts["no_cpu_warning"] = True
        elif not arg.startswith("-"):
            opts["server"] = arg
        i += 1
    return opts


class _Lab:
    def __init__(self, tool: str):
        self.tool = tool
        fixture_path = os.environ.get("FABRIC_LAB_PERFTEST_FIXTURE")
        self.fixture = json.loads(Path(fixture_path).read_text()) if fixture_path else {}
        state = os.environ.get("FABRIC_LAB_PERFTEST_STATE")
        self.state = Path(state) if state else None
        conn = os.environ.get("SSH_CONNECTION", "").split()
        self.address = conn[2] if len(conn) >= 3 else "127.0.0.1"
        self.host = self.fixture.get("hosts", {}).get(self.address, self.address)

    def name_of(self, address: str) -> str:
        return self.fixture.get("hosts", {}).get(address, address)

    def event(self, **fields) -> None:
        if self.state is None:
            return
        line = json.dumps({"t": time.time(), "pid": os.getpid(), "host": self.host, "tool": self.tool,
                           "nice": os.nice(0), **fields})
        fd = os.open(self.state / "events.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())  # one write with O_APPEND: lines never interleave
        finally:
            os.close(fd)

    def pair_spec(self, source: str, destination: str) -> dict:
        pairs = self.fixture.get("pairs", {})
        spec = dict(self.fixture.get("default", {}))
        spec.update(pairs.get(f"{source}>{destination}", pairs.get(f"{source}>*", pairs.get(f"*>{destination}", {}))))
        return spec


def _print(text: str, stream=None) -> None:
    stream = stream or sys.stdout
    stream.write(text)
    stream.flush()


def _link(lab: _Lab, opts: dict) -> tuple[str, int | None]:
    return ("Ethernet", opts["gid_index"]) if opts["gid_index"] is not None else ("IB", None)


def run_server(lab: _Lab, opts: dict) -> int:
    port = opts["port"]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((lab.address, port))
        sock.listen(1)
    except OSError:
        _print(f"Couldn't listen to port {port}\n", sys.stderr)
        _print("Unable to open file descriptor for socket connection\n", sys.stderr)
        lab.event(event="server_failed", port=port)
        return 1
    pidfile = lab.state / f"server-{port}-{os.getpid()}.pid" if lab.state else None
    if pidfile:
        pidfile.write_text(str(os.getpid()))
    lab.event(event="server_start", port=port, argv=opts["argv"])
    try:
        _print("\n************************************\n* Waiting for client to connect... *\n"
               "************************************\n")
        conn, _ = sock.accept()  # like perftest: no deadline of its own
        with conn:
            hello = json.loads(conn.makefile().readline() or "{}")
            conn.sendall((json.dumps({"server": lab.host}) + "\n").encode())
            result = json.loads(conn.makefile().readline() or "{}")
        link, gid = _link(lab, opts)
        if "stats" in result:
            _print(render_report(lab.tool, result["stats"], size=opts["size"], iters=opts["iters"], role="server",
                                 device=opts["device"], link_type=link, gid_index=gid))
        lab.event(event="server_end", port=port, peer=hello.get("client"))
        return 0 if "stats" in result else 1
    finally:
        if pidfile:
            pidfile.unlink(missing_ok=True)


def run_client(lab: _Lab, opts: dict) -> int:
    port, server = opts["port"], opts["server"]
    destination = lab.name_of(server)
    lab.event(event="client_start", port=port, peer=destination, argv=opts["argv"])
    if lab.pair_spec(lab.host, destination).get("behaviour") == "vanish":
        # e.g. no RDMA device on the client: it never connects, the server is left waiting
        _print(" Unable to find the Infiniband/RoCE device\n", sys.stderr)
        lab.event(event="client_failed", port=port, peer=destination)
        return 1
    try:
        conn = socket.create_connection((server, port), timeout=5)
    except OSError:
        _print(f"Couldn't connect to {server}:{port}\n", sys.stderr)
        _print("Unable to open file descriptor for socket connection\n", sys.stderr)
        lab.event(event="client_failed", port=port, peer=destination)
        return 1
    pidfile = lab.state / f"client-{port}-{os.getpid()}.pid" if lab.state else None
    if pidfile:
        pidfile.write_text(str(os.getpid()))  # left behind if killed: tests check the pid is gone
    spec = lab.pair_spec(lab.host, destination)
    behaviour = spec.get("behaviour", "ok")
    link, gid = _link(lab, opts)
    with conn:
        conn.sendall((json.dumps({"client": lab.host}) + "\n").encode())
        conn.makefile().readline()
        if behaviour == "hang":
            lab.event(event="client_hang", port=port, peer=destination)
            time.sleep(3600)  # only the timeout wrapper ends this
        if behaviour == "fail":
            conn.sendall(b"{}\n")
            _print(" Failed to exchange data between server and clients\n", sys.stderr)
            lab.event(event="client_end", port=port, peer=destination, ok=False)
            if pidfile:
                pidfile.unlink(missing_ok=True)
            return 1
        stats = complete_stats({k: v for k, v in spec.items() if k in STAT_KEYS})
        time.sleep(float(spec.get("seconds", 0.0)))  # the measurement itself
        conn.sendall((json.dumps({"stats": stats}) + "\n").encode())
    if lab.fixture.get("cpu_warning") and not opts["no_cpu_warning"]:
        _print(CPU_WARNING, sys.stderr)
    if opts["out_json"]:
        text = render_json(lab.tool, stats, size=opts["size"], iters=opts["iters"], device=opts["device"],
                           link_type=link, gid_index=gid)
        # perftest's open_file_write() flags: over OpenSSH stdout is a pipe, so /dev/stdout opens
        # with O_RDWR too (it would not if it were a socket); the e2e JSON test runs exactly this.
        fd = os.open(opts["out_json_file"], os.O_CREAT | os.O_RDWR | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
    if behaviour == "garbage":
        _print("#bytes #iterations t_min[usec]\n 2 1000 \x00\x01 nonsense\n")
    elif behaviour == "three_columns":  # older perftest: no avg, stdev or percentiles
        _print(render_banner(lab.tool, role="client", device=opts["device"], link_type=link, gid_index=gid)
               + " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
               + f" {opts['size']:<7} {opts['iters']:<13} {stats['min']:<14.2f} {stats['max']:<12.2f} "
               + f"{stats['typical']:<7.2f}\n" + RESULT_LINE)
    else:
        _print(render_banner(lab.tool, role="client", device=opts["device"], link_type=link, gid_index=gid)
               + RESULT_FMT_LAT + "\n" + report_row(opts["size"], opts["iters"], stats) + RESULT_LINE)
    lab.event(event="client_end", port=port, peer=destination, ok=True)
    if pidfile:
        pidfile.unlink(missing_ok=True)
    return 0


def main(argv: list[str] | None = None, tool: str | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    tool = tool or Path(sys.argv[0]).name
    if tool not in PROGRAMS:
        tool = "ib_write_lat"
    lab = _Lab(tool)
    opts = _parse_args(argv)
    return run_client(lab, opts) if opts["server"] else run_server(lab, opts)


class SimulatedPerftest:
    """perftest without processes, for ``lab.ssh_hosts.SimulatedHosts``: ``answer(host, argv)``.

    A server registers its port and waits for the client of that port (the collector gives every
    running probe its own port, so the port identifies the probe); a client finds the server by
    port, "measures" for ``seconds`` and both return perftest's report. A server nobody connects
    to gives up after ``server_wait`` (standing in for the ``timeout`` wrapper the SSH lab strips).
    ``fixture`` is the same shape as the fake programs' fixture (pairs keyed by host names).
    """

    def __init__(self, fixture: dict | None = None, server_wait: float = 30.0):
        self.fixture = fixture or {}
        self.server_wait = server_wait
        self._servers: dict[int, tuple[str, object]] = {}  # port -> (server host, future of stats)
        self.probes = 0

    def _spec(self, source: str, destination: str, device: str | None = None) -> dict:
        # "devices": {name: fixture} answers probes run on that RDMA device (-d) from their own fixture,
        # so one simulated host can sit on two fabrics
        fixture = self.fixture.get("devices", {}).get(device, self.fixture)
        pairs = fixture.get("pairs", {})
        spec = dict(fixture.get("default", {}))
        spec.update(pairs.get(f"{source}>{destination}", {}))
        return spec

    async def answer(self, host: str, argv: list[str]) -> tuple[int, str, str]:
        import asyncio

        if argv == ["true"]:  # the collector's host check
            return 0, "", ""
        tool_at = next((i for i, a in enumerate(argv) if Path(a).name in PROGRAMS), None)
        if tool_at is None:
            return 127, "", f"sh: 1: {argv[0] if argv else ''}: not found\n"
        tool = Path(argv[tool_at]).name
        opts = _parse_args(argv[tool_at + 1:])
        link, gid = ("Ethernet", opts["gid_index"]) if opts["gid_index"] is not None else ("IB", None)
        port = opts["port"]
        if opts["server"] is None:
            if port in self._servers:
                return 1, "", f"Couldn't listen to port {port}\nUnable to open file descriptor for socket connection\n"
            done = asyncio.get_running_loop().create_future()
            self._servers[port] = (host, done)
            try:
                stats = await asyncio.wait_for(done, self.server_wait)
            except asyncio.TimeoutError:
                return 124, "", ""
            finally:
                self._servers.pop(port, None)
            if not stats:
                return 1, "", " Failed to exchange data between server and clients\n"
            return 0, render_report(tool, stats, size=opts["size"], iters=opts["iters"], role="server",
                                    device=opts["device"], link_type=link, gid_index=gid), ""
        entry = self._servers.get(port)
        if entry is None or entry[1].done():
            return 1, "", f"Couldn't connect to {opts['server']}:{port}\nUnable to open file descriptor for socket connection\n"
        destination, done = entry
        spec = self._spec(host, destination, opts["device"])
        if spec.get("behaviour") == "fail":
            done.set_result({})
            return 1, "", " Failed to exchange data between server and clients\n"
        await asyncio.sleep(float(spec.get("seconds", 0.0)))
        stats = complete_stats({k: v for k, v in spec.items() if k in STAT_KEYS})
        if not done.done():
            done.set_result(stats)
        self.probes += 1
        return 0, render_report(tool, stats, size=opts["size"], iters=opts["iters"], role="client",
                                device=opts["device"], link_type=link, gid_index=gid), ""


def install_programs(bin_dir: str | os.PathLike, python: str | None = None) -> list[Path]:
    """Write ``ib_write_lat``/``ib_send_lat``/``ib_read_lat`` into ``bin_dir``, running this module."""
    bin_dir = Path(bin_dir)
    bin_dir.mkdir(parents=True, exist_ok=True)
    package_root = Path(__file__).resolve().parents[2]  # the directory holding fabric_exporter/
    paths = []
    for tool in PROGRAMS:
        path = bin_dir / tool
        # -S -E: skip site and environment (PYTHONPATH...) so each start costs as little as possible.
        path.write_text(f"#!{python or sys.executable} -S\nimport sys\nsys.path.insert(0, {str(package_root)!r})\n"
                        f"from fabric_exporter.lab.perftest import main\nsys.exit(main(tool={tool!r}))\n")
        path.chmod(0o755)
        paths.append(path)
    return paths


def random_stats(rng: random.Random, typical_us: float = 2.0) -> dict:
    """A plausible, consistent set of statistics around ``typical_us`` (for fixtures and benches)."""
    typical = round(typical_us * rng.uniform(0.9, 1.2), 2)
    p99 = round(typical * rng.uniform(1.1, 1.8), 2)
    p999 = round(p99 * rng.uniform(1.1, 3.0), 2)
    mx = round(p999 * rng.uniform(1.0, 4.0), 2)
    mn = round(typical * rng.uniform(0.8, 0.99), 2)
    avg = round(min(max(typical * rng.uniform(1.0, 1.1), mn), mx), 2)
    return {"min": mn, "max": mx, "typical": typical, "avg": avg, "stdev": round(typical * 0.1, 2),
            "p99": p99, "p999": p999}


if __name__ == "__main__":
    sys.exit(main())
