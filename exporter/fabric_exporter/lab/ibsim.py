"""A simulated InfiniBand fabric for tests, benchmarks and ``fabric-exporter lab``.

``FatTree`` generates a two-level fat tree in the topology format ibsim reads (the one ibnetdiscover
prints), with explicit GUIDs so callers know every node's identity. ``IbsimFabric`` starts ibsim on
that topology and opensm on top of it (opensm assigns LIDs; tools see nothing useful before it is
MASTER), drives ibsim's console (PerformanceSet, Unlink, ReLink, Error) and stops both by PID.

The real infiniband-diags binaries reach the simulated fabric when ``libumad2sim.so`` is preloaded
and ``IBSIM_SOCKNAME`` names the fabric's socket; ``tool_env()`` returns exactly that, so several
fabrics can run side by side.
"""

from __future__ import annotations

import os
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
        order = [n for n in self.nodes.values() if n.nodeid.startswith("leaf")] + \
                [n for n in self.nodes.values() if n.nodeid.startswith("spine")] + self.cas
        for node in order:
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


class IbsimFabric:
    """ibsim + opensm on a topology, in ``workdir``. Use as a context manager, or start()/stop()."""

    def __init__(self, topology: FatTree, workdir: str | os.PathLike, sockname: str | None = None):
        self.topology = topology
        self.workdir = Path(workdir)
        self.sockname = sockname or f"fabx{os.getpid()}_{id(self) & 0xFFFF:x}"
        self.ibsim: subprocess.Popen | None = None
        self.opensm: subprocess.Popen | None = None
        self._log = self.workdir / "ibsim.log"
        self._sync = 0

    # -- lifecycle ----------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        return tool_env(self.sockname)

    def start(self, timeout: float = 60.0) -> IbsimFabric:
        self.workdir.mkdir(parents=True, exist_ok=True)
        net = self.workdir / "net"
        net.write_text(self.topology.netfile())
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
                ["opensm", "-d", "2", "-f", str(self.workdir / "opensm.log")],
                stdin=subprocess.DEVNULL, stdout=open(self.workdir / "opensm.out", "wb"),
                stderr=subprocess.STDOUT, cwd=self.workdir, env={**env, **self.env()},
                start_new_session=True)  # its own session: it must not die with a parent shell
            self._wait_for(self.workdir / "opensm.out", b"Entering MASTER state", timeout, "opensm to become MASTER")
            self._wait_for(self.workdir / "opensm.log", b"SUBNET UP", timeout, "opensm to bring the subnet up")
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_for(self, path: Path, needle: bytes, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc, name in ((self.ibsim, "ibsim"), (self.opensm, "opensm")):
                if proc is not None and proc.poll() is not None:
                    raise IbsimError(f"{name} exited with {proc.returncode} while waiting for {what}: "
                                     f"{self._tail(path)}")
            try:
                if needle in path.read_bytes():
                    return
            except FileNotFoundError:
                pass
            time.sleep(0.05)
        raise IbsimError(f"timed out after {timeout:g}s waiting for {what}: {self._tail(path)}")

    @staticmethod
    def _tail(path: Path) -> str:
        try:
            return path.read_text(errors="replace")[-400:]
        except OSError:
            return "(no log)"

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
        start = self._log.stat().st_size
        self.ibsim.stdin.write(f"{line}\n{marker}\n".encode())
        self.ibsim.stdin.flush()
        self._wait_for(self._log, marker.encode(), timeout, f"ibsim to run {line!r}")
        with open(self._log, "rb") as f:
            f.seek(start)
            out = f.read().decode(errors="replace")
        out = out.split(marker)[0]
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


__all__ = ["FatTree", "IbsimFabric", "IbsimError", "SimNode", "SimLink", "tool_env", "lab_config", "main", "UMAD2SIM"]


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
