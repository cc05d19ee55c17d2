"""Simulated RoCE switches served over real SNMP by snmpsim.

A ``SimulatedSwitch`` holds counter state for one switch model (``sonic``: IF-MIB +
CISCO-PFC-EXT-MIB + CISCO-SWITCH-QOS-MIB; ``arista``: IF-MIB + ARISTA-PFC-MIB + ARISTA-QUEUE-MIB;
``ieee``: IF-MIB + IEEE8021-PFC-MIB), renders it as a ``.snmprec`` file and can advance its counters
between polls. Interfaces ``connect``-ed to a host also serve that host as their LLDP neighbour
(LLDP-MIB, or LLDP-V2-MIB with ``lldp_mib="v2"``), as lldpd on a Linux host announces itself:
system name = host name, port ID = the NIC's MAC (subtype macAddress), port description = its netdev. ``SnmpSim`` starts and stops one snmpsim process serving any number of switches (one
community / v3 context per data file). Used by the tests, bench/bench_snmp.py and the lab.

snmpsim re-reads a data file when its mtime (whole seconds) changes, so every write moves the mtime
forward by at least one second: a rewrite within the same second would otherwise go unnoticed.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..catalog import mib
from .ports import free_udp_port
from .switch_buffers import SwitchBuffers

# snmprec tags
INTEGER, STRING, COUNTER32, GAUGE32, TIMETICKS, COUNTER64 = 2, 4, 65, 66, 67, 70

SYS_DESCR = (1, 3, 6, 1, 2, 1, 1, 1, 0)
# the MIB tables' entries are the catalog's (catalog/mib.py); the column numbers below are the MIBs'
SYS_UPTIME = mib.SYSTEM.entry + (3, 0)
IF_NUMBER = (1, 3, 6, 1, 2, 1, 2, 1, 0)
IF_ENTRY = mib.IF.entry
IFX_ENTRY = mib.IF_X.entry
IEEE_PFC_ENTRY = mib.IEEE_PFC.entry
CPFC_PRIO_ENTRY = mib.CISCO_PFC_PRIORITY.entry
CSQ_STATS_VALUE = mib.CISCO_QOS_STATS.entry + (4,)
ARISTA_PFC_PRIO_ENTRY = mib.ARISTA_PFC_PRIORITY.entry
ARISTA_PFCWD_ENTRY = mib.ARISTA_PFC_WATCHDOG.entry
ARISTA_EGRESS_ENTRY = mib.ARISTA_EGRESS_QUEUE.entry
LLDP_LOC_PORT_ENTRY = mib.LLDP_LOC_PORT.entry
LLDP_REM_ENTRY = mib.LLDP_REM.entry
LLDP_V2_REM_ENTRY = mib.LLDP_V2_REM.entry
HEX = "4x"  # snmprec tag: an OCTET STRING given in hex

MASK32 = (1 << 32) - 1
MASK64 = (1 << 64) - 1
MODELS = ("sonic", "arista", "ieee")


@dataclass
class SimInterface:
    ifindex: int
    name: str
    alias: str
    oper_status: int = 1
    high_speed: int = 400000  # Mb/s
    # IF-MIB counters by object name (Counter64 HC columns, Counter32 discards/errors)
    counters: dict[str, int] = field(default_factory=dict)
    # per priority 0..7: [requests (sent), indications (received)]
    pfc: list[list[int]] = field(default_factory=list)
    # IEEE8021-PFC-MIB per-interface [requests, indications] (Counter32)
    ieee_pfc: list[int] = field(default_factory=lambda: [0, 0])
    # queue (0-based) -> stat name -> value.  stat names: uc_pkts uc_bytes mc_pkts mc_bytes
    # uc_drop_pkts uc_drop_bytes mc_drop_pkts mc_drop_bytes; arista also wd_stuck wd_recovered
    queues: dict[int, dict[str, int]] = field(default_factory=dict)
    # PFC watchdog per queue: status ("operational"/"stormed") and counters (CLI only)
    pfcwd: dict[int, dict] = field(default_factory=dict)
    # the LLDP neighbour behind the interface: (system name, its port description, its port MAC)
    neighbor: tuple[str, str, str] | None = None


IF_COUNTERS_64 = {  # IF-MIB ifXEntry column -> name
    6: "ifHCInOctets", 7: "ifHCInUcastPkts", 8: "ifHCInMulticastPkts", 9: "ifHCInBroadcastPkts",
    10: "ifHCOutOctets", 11: "ifHCOutUcastPkts", 12: "ifHCOutMulticastPkts", 13: "ifHCOutBroadcastPkts",
}
IF_COUNTERS_32 = {13: "ifInDiscards", 14: "ifInErrors", 19: "ifOutDiscards", 20: "ifOutErrors"}
CSQ_TYPES = {1: "uc_pkts", 2: "uc_bytes", 3: "mc_pkts", 4: "mc_bytes",
             5: "uc_drop_pkts", 6: "uc_drop_bytes", 7: "mc_drop_pkts", 8: "mc_drop_bytes"}


class SimulatedSwitch:
    """Counter state of one switch, rendered as snmprec. Deterministic for a given seed."""

    def __init__(self, name: str, model: str = "sonic", ports: int = 64, queues: int = 8, seed: int = 1,
                 uptime_ticks: int = 123456):
        if model not in MODELS:
            raise ValueError(f"unknown switch model {model!r} (known: {', '.join(MODELS)})")
        self.name = name
        self.model = model
        self.uptime_ticks = uptime_ticks
        self.queue_count = queues
        self.seed = seed
        self.lldp_mib = "v1"  # which LLDP MIB serves the neighbours: "v1" (LLDP-MIB) or "v2" (LLDP-V2-MIB)
        self.interfaces: list[SimInterface] = []
        #: extra raw records (oid tuple -> (tag, value)) merged over the generated ones (tests use it
        #: to inject variations such as snmpsim's delay module); value None removes a record.
        self.overrides: dict[tuple[int, ...], tuple[str | int, object] | None] = {}
        for i in range(ports):
            if model == "sonic":  # SONiC: EthernetN with N = 4*i, ifIndex = N + 1
                ifindex, ifname = 4 * i + 1, f"Ethernet{4 * i}"
            else:
                ifindex, ifname = i + 1, f"Ethernet{i + 1}"
            intf = SimInterface(ifindex, ifname, f"{name} port {i} to host{i:03d}")
            base = (seed * 1000 + i) * 1000
            for col, cname in IF_COUNTERS_64.items():
                intf.counters[cname] = base * 10 + col
            for col, cname in IF_COUNTERS_32.items():
                intf.counters[cname] = (base + col) & MASK32
            intf.pfc = [[base + 10 * p + 1, base + 10 * p + 2] for p in range(8)]
            intf.ieee_pfc = [(base + 7) & MASK32, (base + 9) & MASK32]
            for q in range(queues):
                intf.queues[q] = {stat: base + 100 * q + k for k, stat in CSQ_TYPES.items()}
                intf.queues[q]["wd_stuck"] = q % 3
                intf.queues[q]["wd_recovered"] = q % 2
                # served by the CLI only (SONiC's SNMP has no ECN marks)
                intf.queues[q].update(wred_drop_pkts=base + 7 * q + 1, wred_drop_bytes=base + 7 * q + 2,
                                      ecn_pkts=base + 7 * q + 3, ecn_bytes=(base + 7 * q + 4) * 1000)
            for q in (3, 4):  # PFC watchdog on the lossless queues
                intf.pfcwd[q] = {"status": "operational", "detected": i % 3, "restored": i % 3,
                                 "tx_ok": base + q, "tx_drop": 0, "rx_ok": base + 2 * q, "rx_drop": 0,
                                 "tx_last_ok": 0, "tx_last_drop": 0, "rx_last_ok": 0, "rx_last_drop": 0}
            self.interfaces.append(intf)
        # buffer watermarks and PFC history (CLI only: watermarkstat, pfcstat --history)
        self.buffers = SwitchBuffers.build(ports, queues, seed)

    # -- state changes ---------------------------------------------------------------------------

    def connect(self, port_index: int, host: str, netdev: str) -> None:
        """Cable interface ``port_index`` to ``host``'s NIC ``netdev``: the host is its LLDP neighbour."""
        mac = f"0c:42:a1:{self.seed & 0xFF:02x}:{port_index >> 8 & 0xFF:02x}:{port_index & 0xFF:02x}"
        self.interfaces[port_index].neighbor = (host, netdev, mac)

    def advance(self, step: int = 1) -> None:
        """Move every counter forward (by amounts that differ per counter), and uptime by 30 s."""
        self.uptime_ticks = (self.uptime_ticks + 3000 * step) & MASK32
        for n, intf in enumerate(self.interfaces):
            for k, cname in enumerate(IF_COUNTERS_64.values()):
                intf.counters[cname] = (intf.counters[cname] + step * (1000 + 7 * n + k)) & MASK64
            for k, cname in enumerate(IF_COUNTERS_32.values()):
                intf.counters[cname] = (intf.counters[cname] + step * (3 + k)) & MASK32
            for p in range(8):
                intf.pfc[p][0] += step * (p + 1)
                intf.pfc[p][1] += step * (p + 2)
            intf.ieee_pfc = [(intf.ieee_pfc[0] + step * 5) & MASK32, (intf.ieee_pfc[1] + step * 6) & MASK32]
            for q, stats in intf.queues.items():
                for k, stat in enumerate(CSQ_TYPES.values()):
                    stats[stat] += step * (q + k + 1)
                for k, stat in enumerate(("wred_drop_pkts", "wred_drop_bytes", "ecn_pkts", "ecn_bytes")):
                    stats[stat] += step * (q + 2 * k + 1)
            for wd in intf.pfcwd.values():
                wd["tx_ok"] += step * 100
                wd["rx_ok"] += step * 90

    def restart(self, uptime_ticks: int = 500) -> None:
        """The agent restarted: uptime starts over and every counter is back near zero."""
        self.uptime_ticks = uptime_ticks
        for intf in self.interfaces:
            for cname in intf.counters:
                intf.counters[cname] = 3
            intf.pfc = [[1, 2] for _ in range(8)]
            intf.ieee_pfc = [1, 1]
            for stats in intf.queues.values():
                for stat in stats:
                    stats[stat] = 0
            for wd in intf.pfcwd.values():
                wd.update({k: 0 for k in wd if k != "status"}, status="operational")

    def storm(self, port_index: int, queue: int, dropped: int = 1000) -> None:
        """A PFC storm on one queue: the watchdog detects it and drops while it lasts."""
        wd = self.interfaces[port_index].pfcwd[queue]
        wd["status"] = "stormed"
        wd["detected"] += 1
        wd["tx_drop"] += dropped
        wd["rx_drop"] += dropped // 2
        wd["tx_last_drop"], wd["rx_last_drop"] = dropped, dropped // 2

    def storm_over(self, port_index: int, queue: int) -> None:
        wd = self.interfaces[port_index].pfcwd[queue]
        wd["status"] = "operational"
        wd["restored"] += 1

    # -- rendering -------------------------------------------------------------------------------

    def records(self) -> dict[tuple[int, ...], tuple[str | int, object]]:
        r: dict[tuple[int, ...], tuple[str | int, object]] = {
            SYS_DESCR: (STRING, f"{self.model} simulated switch {self.name}"),
            SYS_UPTIME: (TIMETICKS, self.uptime_ticks),
            IF_NUMBER: (INTEGER, len(self.interfaces)),
        }
        for intf in self.interfaces:
            i = intf.ifindex
            r[IF_ENTRY + (1, i)] = (INTEGER, i)
            r[IF_ENTRY + (2, i)] = (STRING, intf.name)
            r[IF_ENTRY + (8, i)] = (INTEGER, intf.oper_status)
            for col, cname in IF_COUNTERS_32.items():
                r[IF_ENTRY + (col, i)] = (COUNTER32, intf.counters[cname])
            r[IFX_ENTRY + (1, i)] = (STRING, intf.name)
            for col, cname in IF_COUNTERS_64.items():
                r[IFX_ENTRY + (col, i)] = (COUNTER64, intf.counters[cname])
            r[IFX_ENTRY + (15, i)] = (GAUGE32, intf.high_speed)
            r[IFX_ENTRY + (18, i)] = (STRING, intf.alias)
            if self.model == "ieee":
                r[IEEE_PFC_ENTRY + (2, i)] = (COUNTER32, intf.ieee_pfc[0])
                r[IEEE_PFC_ENTRY + (3, i)] = (COUNTER32, intf.ieee_pfc[1])
            elif self.model == "sonic":
                for p in range(8):
                    r[CPFC_PRIO_ENTRY + (2, i, p)] = (COUNTER64, intf.pfc[p][0])
                    r[CPFC_PRIO_ENTRY + (3, i, p)] = (COUNTER64, intf.pfc[p][1])
                # SONiC: egress (2) only; queues numbered from 1 over the port's queue list, unicast
                # queues first (types 1,2,5,6), then multicast ones (types 3,4,7,8) -- the CLI's
                # UC0..UC<n-1>, MC<n>..MC<2n-1>.
                n = len(intf.queues)
                for q, stats in intf.queues.items():
                    for stat_type, stat in CSQ_TYPES.items():
                        qindex = q + 1 if stat.startswith("uc_") else n + q + 1
                        r[CSQ_STATS_VALUE + (i, 2, qindex, stat_type)] = (COUNTER64, stats[stat])
            else:  # arista
                for p in range(8):
                    r[ARISTA_PFC_PRIO_ENTRY + (3, i, p)] = (COUNTER64, intf.pfc[p][0])
                    r[ARISTA_PFC_PRIO_ENTRY + (4, i, p)] = (COUNTER64, intf.pfc[p][1])
                for q, stats in intf.queues.items():
                    # watchdog index: ifIndex.queueType(0 unicast).queueId
                    r[ARISTA_PFCWD_ENTRY + (4, i, 0, q)] = (INTEGER, stats["wd_stuck"])
                    r[ARISTA_PFCWD_ENTRY + (5, i, 0, q)] = (INTEGER, stats["wd_recovered"])
                    # egress queue index: ifIndex.queueIndex.packetType (PacketType: 0 unicast, 1 multicast)
                    for ptype, cast in ((0, "uc"), (1, "mc")):
                        r[ARISTA_EGRESS_ENTRY + (4, i, q, ptype)] = (COUNTER64, stats[f"{cast}_pkts"])
                        r[ARISTA_EGRESS_ENTRY + (5, i, q, ptype)] = (COUNTER64, stats[f"{cast}_bytes"])
                        r[ARISTA_EGRESS_ENTRY + (6, i, q, ptype)] = (COUNTER64, stats[f"{cast}_drop_pkts"])
                        r[ARISTA_EGRESS_ENTRY + (7, i, q, ptype)] = (COUNTER64, stats[f"{cast}_drop_bytes"])
        self._lldp_records(r)
        for oid, rec in self.overrides.items():
            if rec is None:
                r.pop(oid, None)
            else:
                r[oid] = rec
        return r

    def _lldp_records(self, r: dict) -> None:
        """LLDP as SONiC's agent serves it: a port number is the ifIndex, the local port ID its alias
        (subtype local); each neighbour as lldpd on a Linux host announces itself."""
        if not any(intf.neighbor for intf in self.interfaces):
            return
        for n, intf in enumerate(self.interfaces):
            i = intf.ifindex
            if self.lldp_mib == "v1":
                r[LLDP_LOC_PORT_ENTRY + (2, i)] = (INTEGER, 7)  # local
                r[LLDP_LOC_PORT_ENTRY + (3, i)] = (STRING, f"etp{n + 1}")
            if intf.neighbor is None:
                continue
            host, netdev, mac = intf.neighbor
            if self.lldp_mib == "v1":
                entry, index, first = LLDP_REM_ENTRY, (0, i, 1), 4
            else:  # lldpV2RemTimeMark.lldpV2RemLocalIfIndex.lldpV2RemLocalDestMACAddress.lldpV2RemIndex
                entry, index, first = LLDP_V2_REM_ENTRY, (0, i, 1, 1), 5
            hex_mac = mac.replace(":", "")
            r[entry + (first, *index)] = (INTEGER, 4)  # chassis ID subtype: macAddress
            r[entry + (first + 1, *index)] = (HEX, hex_mac)
            r[entry + (first + 2, *index)] = (INTEGER, 3)  # port ID subtype: macAddress
            r[entry + (first + 3, *index)] = (HEX, hex_mac)
            r[entry + (first + 4, *index)] = (STRING, netdev)
            r[entry + (first + 5, *index)] = (STRING, host)
            r[entry + (first + 6, *index)] = (STRING, "Debian GNU/Linux 12 (bookworm) Linux 6.1.0-28-amd64")

    def render(self) -> str:
        """The .snmprec text: ``OID|tag|value`` lines sorted by OID."""
        records = self.records()
        return "".join(f"{'.'.join(map(str, oid))}|{records[oid][0]}|{records[oid][1]}\n"
                       for oid in sorted(records))

    def varbind_count(self) -> int:
        return len(self.records())


def wait_udp_answers(port: int, community: str, deadline: float) -> None:
    """Wait until an SNMP agent on 127.0.0.1:port answers a v2c GET for sysUpTime.0 with ``community``."""
    # A minimal, hand-encoded v2c GetRequest: avoids importing pysnmp into the lab's start-up path.
    oid = bytes([0x2B, 6, 1, 2, 1, 1, 3, 0])
    vb = b"\x30" + bytes([len(oid) + 4]) + b"\x06" + bytes([len(oid)]) + oid + b"\x05\x00"
    vbl = b"\x30" + bytes([len(vb)]) + vb
    pdu_body = b"\x02\x01\x01\x02\x01\x00\x02\x01\x00" + vbl
    pdu = b"\xa0" + bytes([len(pdu_body)]) + pdu_body
    c = community.encode()
    msg_body = b"\x02\x01\x01\x04" + bytes([len(c)]) + c + pdu
    msg = b"\x30" + bytes([len(msg_body)]) + msg_body
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(0.3)
        while time.monotonic() < deadline:
            try:
                s.sendto(msg, ("127.0.0.1", port))
                s.recvfrom(65535)
                return
            except (socket.timeout, ConnectionRefusedError):
                time.sleep(0.1)
    raise TimeoutError(f"snmpsim on 127.0.0.1:{port} did not answer community {community!r}")


@dataclass
class V3User:
    user: str
    auth_key: str
    priv_key: str
    auth_proto: str = "SHA256"  # snmpsim names: MD5 SHA SHA224 SHA256 SHA384 SHA512
    priv_proto: str = "AES128"  # DES 3DES AES AES128 AES192 AES256


class SnmpSim:
    """One snmpsim-command-responder process on 127.0.0.1 serving every switch given to it.

    Each switch is a data file ``<community>.snmprec``; its community (and SNMPv3 context) is the
    switch's name. ``write(switch)`` re-renders one data file after its counters changed.
    """

    def __init__(self, switches: list[SimulatedSwitch], workdir: str | os.PathLike | None = None,
                 port: int | None = None, v3_user: V3User | None = None, v3_users: list[V3User] = ()):
        self.switches = {sw.name: sw for sw in switches}
        self._own_dir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="fabric-snmpsim-"))
        self.data_dir = self.workdir / "data"
        self.cache_dir = self.workdir / "cache"
        self.port = port or free_udp_port()
        self.v3_users = ([v3_user] if v3_user else []) + list(v3_users)
        self.proc: subprocess.Popen | None = None
        self._mtime = 0
        self.log_path = self.workdir / "snmpsim.log"

    def write(self, switch: SimulatedSwitch) -> None:
        path = self.data_dir / f"{switch.name}.snmprec"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(switch.render())
        # Whole-second mtimes that always move forward (see the module docstring).
        self._mtime = max(self._mtime + 1, int(time.time()) + 1)
        os.utime(tmp, (self._mtime, self._mtime))
        os.replace(tmp, path)

    def start(self, timeout: float = 30.0) -> SnmpSim:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        for sw in self.switches.values():
            self.write(sw)
        exe = shutil.which("snmpsim-command-responder")
        argv = [exe] if exe else [sys.executable, "-m", "snmpsim.commands.responder"]
        argv += [f"--data-dir={self.data_dir}", f"--cache-dir={self.cache_dir}",
                 f"--agent-udpv4-endpoint=127.0.0.1:{self.port}",
                 "--logging-method=null"]
        for u in self.v3_users:  # each --v3-user takes the key/protocol options that follow it
            argv += [f"--v3-user={u.user}", f"--v3-auth-key={u.auth_key}", f"--v3-auth-proto={u.auth_proto}",
                     f"--v3-priv-key={u.priv_key}", f"--v3-priv-proto={u.priv_proto}"]
        env = {**os.environ, "SNMPSIM_ALLOW_ROOT": "true"}
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                         start_new_session=True)
        deadline = time.monotonic() + timeout
        try:
            first = next(iter(self.switches))
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"snmpsim exited with {self.proc.returncode}: "
                                       f"{self.log_path.read_text()[-2000:]}")
                try:
                    wait_udp_answers(self.port, first, min(deadline, time.monotonic() + 1))
                    break
                except TimeoutError:
                    if time.monotonic() >= deadline:
                        raise
        except BaseException:
            self.stop()
            raise
        return self

    def pause(self) -> None:
        """Stop answering (SIGSTOP) without closing the socket: requests time out."""
        if self.proc:
            os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        if self.proc:
            os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.kill(self.proc.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                self.proc.terminate()
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(5)
            self.proc = None
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> SnmpSim:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
