"""A simulated InfiniBand fabric for tests, benchmarks and ``fabric-exporter lab``.

``FatTree`` generates a two-level fat tree in the topology format ibsim reads (the one ibnetdiscover
prints), with explicit GUIDs so callers know every node's identity. ``IbsimFabric`` starts ibsim on
that topology and opensm on top of it (opensm assigns LIDs; tools see nothing useful before it is
MASTER), drives ibsim's console (PerformanceSet, Unlink, ReLink, Error) and stops both by PID.

Everything opensm would keep system-wide stays in the fabric's work directory: on an InfiniBand
management node ``/var/cache/opensm`` (guid2lid, ...), ``/var/log/opensm*`` and ``/etc/opensm``
belong to the real subnet manager, and a simulated fabric must never read or overwrite them. opensm
gets its own config file (``-F``; every path in it under the work dir), cache (``OSM_CACHE_DIR``)
and dump directory (``OSM_TMP_DIR``). Its cache is seeded with a ``guid2lid`` file computed from the
topology, so LIDs are the same on every machine and every run (``FatTree.lids()``).

The real infiniband-diags binaries reach the simulated fabric when ``libumad2sim.so`` is preloaded
and ``IBSIM_SOCKNAME`` names the fabric's socket; ``tool_env()`` returns exactly that, so several
fabrics can run side by side.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"

# ibsim PortInfo: LinkWidthSupported is always 1x..12x and LinkSpeedSupported SDR/DDR/QDR, so a link
# is at its best only when both ends enable 12x (width=15) and QDR (speed=7).
BEST_WIDTH_ENABLED = 15  # 1x|4x|8x|12x
BEST_SPEED_ENABLED = 7  # SDR|DDR|QDR


@dataclass(frozen=True)
class SimNode:
    nodeid: str  # ibsim's id: used in links and console commands
    description: str  # NodeDescription the tools print
    type: str  # "switch" | "ca"
    guid: int
    ports: int

    @property
    def guid_hex(self) -> str:
        return f"0x{self.guid:016x}"

    def port_guid(self, port: int) -> int:
        """ibsim: a switch has one port GUID (the node GUID); a CA port's GUID is node GUID + port."""
        return self.guid if self.type == "switch" else self.guid + port


@dataclass(frozen=True)
class SimLink:
    a: str
    a_port: int
    b: str
    b_port: int
    width_enabled: int | None = None  # per-link override (both ends), e.g. 2 = 4x only: a degraded link


@dataclass
class FatTree:
    """Spines, leaves (each leaf linked to every spine ``uplinks`` times), HCAs on each leaf."""

    spines: int = 2
    leaves: int = 4
    hcas_per_leaf: int = 2
    uplinks: int = 1
    switch_ports: int = 36
    hca_ports: int = 1
    degraded: tuple[tuple[str, int], ...] = ()  # (switch nodeid, port): link enabled at 4x only
    nodes: dict[str, SimNode] = field(default_factory=dict, init=False)
    links: list[SimLink] = field(default_factory=list, init=False)

    SWITCH_GUID_BASE = 0x0002C90300A00000
    CA_GUID_BASE = 0x0002C90300B00000

    def __post_init__(self) -> None:
        down_ports = self.leaves * self.uplinks
        up_ports = self.spines * self.uplinks
        if down_ports > self.switch_ports or up_ports + self.hcas_per_leaf > self.switch_ports:
            raise ValueError("fat tree does not fit the switch radix")
        for s in range(self.spines):
            self._add(SimNode(f"spine-{s + 1:02d}", f"spine-{s + 1:02d}", "switch",
                              self.SWITCH_GUID_BASE + 0x100 * s, self.switch_ports))
        for leaf in range(self.leaves):
            self._add(SimNode(f"leaf-{leaf + 1:02d}", f"leaf-{leaf + 1:02d}", "switch",
                              self.SWITCH_GUID_BASE + 0x10000 + 0x100 * leaf, self.switch_ports))
        n = 0
        for leaf in range(self.leaves):
            for h in range(self.hcas_per_leaf):
                n += 1
                # NodeDescriptions with a space, as real hosts report them ("gpu-001 mlx5_0").
                self._add(SimNode(f"gpu-{n:03d}", f"gpu-{n:03d} mlx5_0", "ca",
                                  self.CA_GUID_BASE + 0x10 * n, self.hca_ports))
                # HCAs on leaf ports 1..h, uplinks after them.
                self.links.append(SimLink(f"leaf-{leaf + 1:02d}", h + 1, f"gpu-{n:03d}", 1))
        degraded = set(self.degraded)
        for leaf in range(self.leaves):
            for s in range(self.spines):
                for u in range(self.uplinks):
                    leaf_port = self.hcas_per_leaf + s * self.uplinks + u + 1
                    spine_port = leaf * self.uplinks + u + 1
                    lid = f"leaf-{leaf + 1:02d}"
                    width = 2 if (lid, leaf_port) in degraded else None
                    self.links.append(SimLink(lid, leaf_port, f"spine-{s + 1:02d}", spine_port, width))

    def _add(self, node: SimNode) -> None:
        self.nodes[node.nodeid] = node

    def node_order(self) -> list[SimNode]:
        """Leaves, spines, HCAs: the order of the net file (its first node is where the SM attaches)."""
        return [n for n in self.nodes.values() if n.nodeid.startswith("leaf")] + \
               [n for n in self.nodes.values() if n.nodeid.startswith("spine")] + self.cas

    def lids(self) -> dict[int, int]:
        """Port GUID -> LID, pinned: 1, 2, ... in ``node_order()`` (a switch has one LID, port 0;
        each HCA port its own). opensm reads them from the guid2lid file ``IbsimFabric`` writes."""
        out: dict[int, int] = {}
        for node in self.node_order():
            for port in ([0] if node.type == "switch" else range(1, node.ports + 1)):
                out[node.port_guid(port)] = len(out) + 1
        return out

    def guid2lid(self) -> str:
        """``lids()`` in opensm's guid2lid cache format: ``<port GUID> <first LID> <last LID>``, each
        entry ended by an empty line (opensm's cache reader continues a value until one)."""
        return "".join(f"0x{guid:016x} 0x{lid:04x} 0x{lid:04x}\n\n" for guid, lid in self.lids().items())

    @property
    def switches(self) -> list[SimNode]:
        return [n for n in self.nodes.values() if n.type == "switch"]

    @property
    def cas(self) -> list[SimNode]:
        return [n for n in self.nodes.values() if n.type == "ca"]

    def peer(self, nodeid: str, port: int) -> tuple[str, int] | None:
        for link in self.links:
            if (link.a, link.a_port) == (nodeid, port):
                return link.b, link.b_port
            if (link.b, link.b_port) == (nodeid, port):
                return link.a, link.a_port
        return None

    def netfile(self) -> str:
        """The topology in ibsim's net format (ibnetdiscover layout, explicit GUIDs and descriptions)."""
        by_node: dict[str, list[tuple[int, str, int, int | None]]] = {n: [] for n in self.nodes}
        for link in self.links:
            by_node[link.a].append((link.a_port, link.b, link.b_port, link.width_enabled))
            by_node[link.b].append((link.b_port, link.a, link.a_port, link.width_enabled))
        out = ["# generated by fabric_exporter.lab.ibsim.FatTree", f"width={BEST_WIDTH_ENABLED}",
               f"speed={BEST_SPEED_ENABLED}", ""]
        # The first node in the file is where clients attach (and the SM runs): a leaf switch.
        for node in self.node_order():
            kind = "Switch" if node.type == "switch" else "Hca"
            out.append(f"{'switchguid' if node.type == 'switch' else 'caguid'}=0x{node.guid:x}")
            out.append(f'{kind}\t{node.ports} "{node.nodeid}"\t\t# "{node.description}"')
            for port, peer, peer_port, width in sorted(by_node[node.nodeid]):
                opt = f"\tw={width}" if width else ""
                out.append(f'[{port}]\t"{peer}"[{peer_port}]{opt}')
            out.append("")
        return "\n".join(out) + "\n"


def tool_env(sockname: str) -> dict[str, str]:
    """Environment that makes the real infiniband-diags tools talk to the fabric named ``sockname``."""
    return {"LD_PRELOAD": UMAD2SIM, "IBSIM_SOCKNAME": sockname}


class IbsimError(RuntimeError):
    pass


def opensm_config(workdir: Path, etc: Path, dump: Path) -> str:
    """opensm's config file (``-F``) for a simulated fabric: every file opensm would read from
    /etc/opensm (now under ``etc``) or write under /var/log (the log in ``workdir``, dumps in ``dump``)
    is inside the work dir (the ones to read are absent, or empty for the node-name map: opensm's
    built-in defaults apply, whatever the host's real SM is configured with)."""
    settings = {
        "log_file": workdir / "opensm.log",
        "dump_files_dir": dump,
        "partition_config_file": etc / "partitions.conf",
        "qos_policy_file": etc / "qos-policy.conf",
        "prefix_routes_file": etc / "prefix-routes.conf",
        "torus_config": etc / "torus-2QoS.conf",
        "per_module_logging_file": etc / "per-module-logging.conf",
        "node_name_map_name": etc / "ib-node-name-map",
        # opensm always copies its errors and major events to syslog: name them as the lab's
        "log_prefix": "fabric-exporter-ibsim",
    }
    return "# generated by fabric_exporter.lab.ibsim: nothing outside this directory\n" + \
        "".join(f"{key} {value}\n" for key, value in settings.items())


class LogFollower:
    """Reads a log another process appends to, from where the last read stopped.

    ``poll`` returns the text up to and including a marker; what follows the marker stays for
    the next call, so each byte of the file is read once however long the log grows. A marker split
    across two writes is found because the search runs over the unmatched rest plus the new bytes.
    """

    CHUNK = 1 << 16

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0  # bytes of the file read so far
        self.pending = bytearray()  # read but not yet returned
        self.bytes_read = 0  # every byte read from the file (tests check each is read about once)

    def skip_to_end(self) -> None:
        """Forget what was written so far (a command's answer starts after this point)."""
        try:
            self.offset = self.path.stat().st_size
        except FileNotFoundError:
            self.offset = 0
        self.pending.clear()

    def _read_new(self) -> bool:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                got = False
                while chunk := f.read(self.CHUNK):
                    self.offset += len(chunk)
                    self.bytes_read += len(chunk)
                    self.pending += chunk
                    got = True
                return got
        except FileNotFoundError:
            return False

    def poll(self, needle: bytes, keep_text: bool = True) -> bytes | None:
        """One look: the text through ``needle`` if it has arrived (then consumed), else None.

        ``keep_text=False``: the caller wants no text, so only a needle-length tail of the unmatched
        bytes is kept (a log that grows while we wait does not grow our memory)."""
        searched_from = 0
        while True:
            at = self.pending.find(needle, searched_from)
            if at >= 0:
                end = at + len(needle)
                text = bytes(self.pending[:end])
                del self.pending[:end]
                return text
            searched_from = max(0, len(self.pending) - len(needle) + 1)
            if not keep_text and searched_from:
                del self.pending[:searched_from]
                searched_from = 0
            if not self._read_new():
                return None

    def tail(self, size: int = 400) -> str:
        try:
            with open(self.path, "rb") as f:
                f.seek(max(0, self.path.stat().st_size - size))
                return f.read(size).decode(errors="replace")
        except OSError:
            return "(no log)"


class IbsimFabric:
    """ibsim + opensm on a topology, in ``workdir``. Use as a context manager, or start()/stop()."""

    def __init__(self, topology: FatTree, workdir: str | os.PathLike, sockname: str | None = None):
        self.topology = topology
        self.workdir = Path(workdir)
        self.sockname = sockname or f"fabx{os.getpid()}_{id(self) & 0xFFFF:x}"
        self.ibsim: subprocess.Popen | None = None
        self.opensm: subprocess.Popen | None = None
        self._log = self.workdir / "ibsim.log"
        self.cache_dir = self.workdir / "opensm-cache"  # OSM_CACHE_DIR: guid2lid, guid2mkey, neighbors
        self.dump_dir = self.workdir / "opensm-dump"  # OSM_TMP_DIR and dump_files_dir: subnet dumps
        self.etc_dir = self.workdir / "opensm-etc"  # what opensm would read from /etc/opensm
        self._followers: dict[Path, LogFollower] = {}
        self._sync = 0
        self.restarts = 0  # how often restart() brought the fabric back

    # -- lifecycle ----------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        return tool_env(self.sockname)

    def opensm_env(self) -> dict[str, str]:
        """opensm's state and dumps in the work dir, never /var/cache/opensm or /var/log."""
        return {"OSM_CACHE_DIR": str(self.cache_dir), "OSM_TMP_DIR": str(self.dump_dir)}

    def start(self, timeout: float = 60.0) -> IbsimFabric:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._followers.clear()  # the logs start over (a restarted fabric truncates them)
        net = self.workdir / "net"
        net.write_text(self.topology.netfile())
        # A fresh cache seeded with the pinned LIDs: opensm keeps a cached LID unless run with -r.
        shutil.rmtree(self.cache_dir, ignore_errors=True)
        self.cache_dir.mkdir()
        (self.cache_dir / "guid2lid").write_text(self.topology.guid2lid())
        self.dump_dir.mkdir(exist_ok=True)
        self.etc_dir.mkdir(exist_ok=True)
        (self.etc_dir / "ib-node-name-map").write_text("")  # opensm warns when it is missing
        osm_conf = self.workdir / "opensm.conf"
        osm_conf.write_text(opensm_config(self.workdir, self.etc_dir, self.dump_dir))
        n_ports = sum(n.ports + 1 for n in self.topology.nodes.values())
        env = {**os.environ, "IBSIM_SOCKNAME": self.sockname}
        env.pop("LD_PRELOAD", None)
        # The console is our pipe: commands are applied in order, and '# marker' lines echo back.
        self.ibsim = subprocess.Popen(
            ["ibsim", "-s", "-N", str(max(2048, len(self.topology.nodes) + 16)),
             "-S", str(max(256, len(self.topology.switches) + 8)), "-P", str(max(n_ports + 64, 16384)),
             str(net)],
            stdin=subprocess.PIPE, stdout=open(self._log, "wb"), stderr=subprocess.STDOUT,
            cwd=self.workdir, env=env, start_new_session=True)
        try:
            self._wait_for(self._log, b"parsing:", timeout, "ibsim to read the topology")
            self.command("# started")
            self.opensm = subprocess.Popen(
                ["opensm", "-F", str(osm_conf), "-d", "2", "-f", str(self.workdir / "opensm.log")],
                stdin=subprocess.DEVNULL, stdout=open(self.workdir / "opensm.out", "wb"),
                stderr=subprocess.STDOUT, cwd=self.workdir, env={**env, **self.opensm_env(), **self.env()},
                start_new_session=True)  # its own session: it must not die with a parent shell
            self._wait_for(self.workdir / "opensm.out", b"Entering MASTER state", timeout, "opensm to become MASTER")
            self._wait_for(self.workdir / "opensm.log", b"SUBNET UP", timeout, "opensm to bring the subnet up")
        except BaseException:
            self.stop()
            raise
        return self

    def _follower(self, path: Path) -> LogFollower:
        if path not in self._followers:
            self._followers[path] = LogFollower(path)
        return self._followers[path]

    def _wait_for(self, path: Path, needle: bytes, timeout: float, what: str, keep_text: bool = False) -> bytes:
        """Wait (bounded) until ``needle`` appears in ``path`` after the last marker found there."""
        follower = self._follower(path)
        deadline = time.monotonic() + timeout
        pause = 0.002  # ibsim answers a command in a few ms: look again soon, then every 50 ms
        while time.monotonic() < deadline:
            for proc, name in ((self.ibsim, "ibsim"), (self.opensm, "opensm")):
                if proc is not None and proc.poll() is not None:
                    raise IbsimError(f"{name} exited with {proc.returncode} while waiting for {what}: "
                                     f"{follower.tail()}")
            text = follower.poll(needle, keep_text)
            if text is not None:
                return text
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        raise IbsimError(f"timed out after {timeout:g}s waiting for {what}: {follower.tail()}")

    def exited(self) -> str | None:
        """None while ibsim and opensm both run; else which one exited, with what, and its log's tail."""
        for proc, name, path in ((self.ibsim, "ibsim", self._log), (self.opensm, "opensm", self.workdir / "opensm.out")):
            if proc is not None and proc.poll() is not None:
                return f"{name} exited with {proc.returncode}: {LogFollower(path).tail()}"
        return None

    def restart(self, timeout: float = 60.0) -> int:
        """Stop what is left and start both again on the same socket name, so the tools' environment
        stays valid. ibsim dies by itself now and then (``ibpanic: sim_ctl_new_client: can't connect
        to in socket``: a tool run killed while ibsim connects back to it), which a lab that runs for
        hours must survive. The old logs are kept as ``*.crash-N``; returns N."""
        self.restarts += 1
        for path in (self._log, self.workdir / "opensm.out", self.workdir / "opensm.log"):
            if path.exists():
                path.replace(path.with_name(f"{path.name}.crash-{self.restarts}"))
        self.stop()
        self.start(timeout)
        return self.restarts

    def stop(self) -> None:
        for proc in (self.opensm, self.ibsim):
            if proc is None or proc.poll() is not None:
                continue
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            try:
                proc.wait(3)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(3)
        if self.ibsim is not None and self.ibsim.stdin:
            try:
                self.ibsim.stdin.close()
            except OSError:
                pass
        self.ibsim = self.opensm = None

    def __enter__(self) -> IbsimFabric:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- console ------------------------------------------------------------------------------

    def command(self, line: str, timeout: float = 10.0) -> str:
        """Send one console command and wait until ibsim has processed it; returns its output."""
        if self.ibsim is None or self.ibsim.stdin is None:
            raise IbsimError("ibsim is not running")
        self._sync += 1
        marker = f"# sync-{self._sync}"
        self._follower(self._log).skip_to_end()  # the answer is what ibsim prints from here on
        self.ibsim.stdin.write(f"{line}\n{marker}\n".encode())
        self.ibsim.stdin.flush()
        text = self._wait_for(self._log, marker.encode(), timeout, f"ibsim to run {line!r}", keep_text=True)
        out = text[:-len(marker)].decode(errors="replace")
        if "not found" in out or "unknown" in out or "bad " in out or "invalid" in out:
            raise IbsimError(f"ibsim refused {line!r}: {out.strip()}")
        return out

    def set_counter(self, nodeid: str, port: int, field_name: str, value: int, extended: bool = False) -> None:
        attr = "PortCountersExtended" if extended else "PortCounters"
        self.command(f'PerformanceSet "{nodeid}"[{port}] {attr}.{field_name}={value}')

    def unlink(self, nodeid: str, port: int) -> None:
        self.command(f'Unlink "{nodeid}"[{port}]')

    def relink(self, nodeid: str, port: int) -> None:
        self.command(f'ReLink "{nodeid}"[{port}]')

    def set_error_rate(self, nodeid: str, port: int, rate: int) -> None:
        """0-100: share of MADs through that port that ibsim drops (0 restores the port)."""
        self.command(f'Error "{nodeid}"[{port}] {rate}')


__all__ = ["FatTree", "IbsimFabric", "IbsimError", "LogFollower", "opensm_config", "SimNode", "SimLink", "tool_env",
           "lab_config", "main", "UMAD2SIM"]


def lab_config(fabric: IbsimFabric, name: str = "ib-lab") -> dict:
    """A config ``targets`` entry that polls ``fabric`` with the local transport."""
    return {"name": name, "fabric": "lab", "collector": "infiniband", "transport": "local", "interval": "15s",
            "timeout": "10s", "options": {"env": fabric.env(), "topology_interval": "5m"}}


def main(argv: list[str] | None = None) -> int:
    """Bring up a simulated fat tree until interrupted; print the tools' environment and a config."""
    import argparse
    import json
    import tempfile

    ap = argparse.ArgumentParser(prog="python -m fabric_exporter.lab.ibsim", description=main.__doc__)
    ap.add_argument("--spines", type=int, default=2)
    ap.add_argument("--leaves", type=int, default=4)
    ap.add_argument("--hcas-per-leaf", type=int, default=4)
    ap.add_argument("--workdir", help="where ibsim/opensm logs and the topology go (default: a temp dir)")
    args = ap.parse_args(argv)
    topo = FatTree(spines=args.spines, leaves=args.leaves, hcas_per_leaf=args.hcas_per_leaf)
    workdir = args.workdir or tempfile.mkdtemp(prefix="fabric-ibsim-")
    with IbsimFabric(topo, workdir) as fabric:
        env = " ".join(f"{k}={v}" for k, v in fabric.env().items())
        print(f"fabric up: {len(topo.switches)} switches, {len(topo.cas)} HCAs; logs in {workdir}")
        print(f"try:   {env} ibqueryerrors --counters --report-port")
        print(f"       {env} ibnetdiscover")
        print("config (YAML accepts JSON):")
        print(json.dumps({"targets": [lab_config(fabric)]}, indent=2))
        print("ibsim console (PerformanceSet / Unlink / ReLink / Error ...; empty line or Ctrl-D to stop):")
        try:
            while True:
                line = input("ibsim> ").strip()
                if not line:
                    break
                print(fabric.command(line).strip() or "ok")
        except (EOFError, KeyboardInterrupt):
            pass
        except IbsimError as e:
            print(f"error: {e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
