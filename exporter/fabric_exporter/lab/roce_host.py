"""A counter model of a GPU host's RoCE NICs, rendered in the real tools' formats.

One ``RoceHost`` holds ports (mlx5 / bnxt_en+bnxt_re / ice+irdma) with their ``ethtool -S`` and
RDMA ``hw_counters`` values, and renders them as the host would show them:

- ``render_ethtool(netdev)``: ``ethtool -S`` text (header + indented ``name: value`` lines, in the
  driver's order; PFC counters only on priorities where PFC is enabled, as mlx5 does);
- ``write_sysfs(root)``: a /sys/class tree (``infiniband/<dev>/ports/<p>/hw_counters/<name>``,
  ``state``, ``link_layer``, ``gid_attrs/ndevs/0``, ``device/net/<netdev>/``, ``device/driver``);
- ``render_rdma_statistic(json=)`` / ``render_rdma_link(json=)``: iproute2 ``rdma`` output;
- ``write_fake_tools(bin_dir, data_dir)``: small ``ethtool``/``rdma`` programs that print the files
  ``write_tool_outputs(data_dir)`` wrote — the PATH of a test sshd;
- ``render_dump()``: exactly what the roce_nic collector's remote script prints for this host, so
  an in-process SSH server (the lab, the benchmark) can answer without a shell.

``advance(seconds)`` moves the counters as traffic would (deterministic for a given seed);
``reset()`` zeroes them as a driver reload does.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

PRIORITIES = range(8)


# ---------------------------------------------------------------------------------------------
# Counter layouts per driver (a representative subset of each driver's real list, in its order)


def _mlx5_ethtool(pfc_priorities: tuple[int, ...], global_pause: bool) -> list[str]:
    names = [
        "rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "tx_tso_packets", "rx_csum_complete",
        "rx_out_of_buffer", "rx_wqe_err", "tx_queue_stopped", "tx_queue_dropped", "rx_cache_reuse",
        "rx_steer_missed_packets", "rx_vport_unicast_packets", "rx_vport_unicast_bytes",
        "tx_vport_unicast_packets", "tx_vport_unicast_bytes", "rx_vport_rdma_unicast_packets",
        "rx_vport_rdma_unicast_bytes", "tx_vport_rdma_unicast_packets", "tx_vport_rdma_unicast_bytes",
        "tx_packets_phy", "rx_packets_phy", "rx_crc_errors_phy", "tx_bytes_phy", "rx_bytes_phy",
        "tx_multicast_phy", "rx_multicast_phy", "rx_in_range_len_errors_phy", "rx_symbol_err_phy",
        "tx_mac_control_phy", "rx_mac_control_phy", "rx_unsupported_op_phy", "rx_pause_ctrl_phy",
        "tx_pause_ctrl_phy", "rx_discards_phy", "tx_discards_phy", "tx_errors_phy",
        "rx_undersize_pkts_phy", "rx_fragments_phy", "rx_jabbers_phy", "rx_64_bytes_phy",
        "rx_65_to_127_bytes_phy", "rx_1519_to_2047_bytes_phy", "rx_2048_to_4095_bytes_phy",
        "rx_4096_to_8191_bytes_phy", "rx_pcs_symbol_err_phy", "rx_corrected_bits_phy",
        "rx_err_lane_0_phy", "rx_err_lane_1_phy", "rx_err_lane_2_phy", "rx_err_lane_3_phy",
        "rx_buffer_passed_thres_phy", "link_down_events_phy",
    ]
    for p in PRIORITIES:
        names += [f"rx_prio{p}_bytes", f"rx_prio{p}_packets", f"rx_prio{p}_discards",
                  f"tx_prio{p}_bytes", f"tx_prio{p}_packets"]
        if p in pfc_priorities:
            names += [f"rx_prio{p}_pause", f"rx_prio{p}_pause_duration", f"tx_prio{p}_pause",
                      f"tx_prio{p}_pause_duration", f"rx_prio{p}_pause_transition"]
    if global_pause:
        names += ["rx_global_pause", "rx_global_pause_duration", "tx_global_pause",
                  "tx_global_pause_duration", "rx_global_pause_transition"]
    names += ["tx_pause_storm_warning_events", "tx_pause_storm_error_events", "module_unplug",
              "module_bus_stuck", "ch0_events", "ch0_poll", "rx0_packets", "rx0_bytes", "tx0_packets",
              "tx0_bytes"]
    return names


MLX5_HW_COUNTERS = [
    "duplicate_request", "implied_nak_seq_err", "lifespan", "local_ack_timeout_err", "np_cnp_sent",
    "np_ecn_marked_roce_packets", "out_of_buffer", "out_of_sequence", "packet_seq_err", "req_cqe_error",
    "req_cqe_flush_error", "req_remote_access_errors", "req_remote_invalid_request",
    "req_transport_retries_exceeded", "resp_cqe_error", "resp_cqe_flush_error", "resp_local_length_error",
    "resp_remote_access_errors", "rnr_nak_retry_err", "roce_adp_retrans", "roce_adp_retrans_to",
    "roce_slow_restart", "roce_slow_restart_cnps", "roce_slow_restart_trans", "rp_cnp_handled",
    "rp_cnp_ignored", "rx_atomic_requests", "rx_icrc_encapsulated", "rx_read_requests", "rx_write_requests",
]


def _bnxt_ethtool(pfc_priorities: tuple[int, ...]) -> list[str]:
    names = []
    for ring in range(2):  # per-ring lines carry a "[ring]: " prefix in the name itself
        names += [f"[{ring}]: rx_ucast_packets", f"[{ring}]: rx_mcast_packets", f"[{ring}]: rx_discards",
                  f"[{ring}]: rx_ucast_bytes", f"[{ring}]: tx_ucast_packets", f"[{ring}]: tx_ucast_bytes"]
    names += ["rx_total_discard_pkts", "tx_total_discard_pkts", "rx_64b_frames", "rx_65b_127b_frames",
              "rx_total_frames", "rx_ucast_frames", "rx_mcast_frames", "rx_bcast_frames", "rx_fcs_err_frames",
              "rx_ctrl_frames", "rx_pause_frames", "rx_pfc_frames", "rx_align_err_frames", "rx_jbr_frames"]
    names += [f"rx_pfc_ena_frames_pri{p}" for p in PRIORITIES]
    names += ["rx_bytes", "rx_runt_bytes", "rx_runt_frames", "rx_stat_discard", "rx_stat_err",
              "tx_64b_frames", "tx_good_frames", "tx_total_frames", "tx_ucast_frames", "tx_pause_frames",
              "tx_pfc_frames", "tx_err"]
    names += [f"tx_pfc_ena_frames_pri{p}" for p in PRIORITIES]
    names += ["tx_total_collisions", "tx_bytes", "tx_xthol_frames", "tx_stat_discard", "tx_stat_error",
              "link_down_events", "continuous_pause_events", "resume_pause_events",
              "continuous_roce_pause_events", "resume_roce_pause_events"]
    names += [f"rx_bytes_cos{c}" for c in range(8)] + [f"rx_packets_cos{c}" for c in range(8)]
    names += [f"rx_discard_bytes_cos{c}" for c in range(8)] + [f"rx_discard_packets_cos{c}" for c in range(8)]
    for p in pfc_priorities:
        names += [f"pfc_pri{p}_rx_duration_us", f"pfc_pri{p}_rx_transitions",
                  f"pfc_pri{p}_tx_duration_us", f"pfc_pri{p}_tx_transitions"]
    return names


BNXT_RE_HW_COUNTERS = [
    "active_pds", "active_ahs", "active_qps", "active_srqs", "active_cqs", "active_mrs", "active_mws",
    "rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes", "recoverable_errors", "rx_roce_errors", "rx_roce_discards",
    "to_retransmits", "seq_err_naks_rcvd", "max_retry_exceeded", "rnr_naks_rcvd", "missing_resp",
    "unrecoverable_err", "bad_resp_err", "local_qp_op_err", "local_protection_err", "mem_mgmt_op_err",
    "remote_invalid_req_err", "remote_access_err", "remote_op_err", "dup_req", "res_exceed_max",
    "oos_drop_count", "tx_cnp_pkts", "rx_cnp_pkts", "rx_ecn_marked_pkts", "lifespan",
]


def _ice_ethtool() -> list[str]:
    names = ["rx_unicast", "tx_unicast", "rx_multicast", "tx_multicast", "rx_bytes", "tx_bytes",
             "rx_dropped", "tx_errors", "tx_linearize", "tx_busy", "rx_buf_failed", "rx_bytes.nic",
             "rx_unicast.nic", "tx_bytes.nic", "tx_unicast.nic", "link_xon_rx.nic", "link_xoff_rx.nic",
             "link_xon_tx.nic", "link_xoff_tx.nic", "rx_crc_errors.nic", "rx_length_errors.nic",
             "rx_undersize.nic", "rx_oversize.nic"]
    for p in PRIORITIES:
        names += [f"tx_priority_{p}_xon.nic", f"tx_priority_{p}_xoff.nic"]
    for p in PRIORITIES:
        names += [f"rx_priority_{p}_xon.nic", f"rx_priority_{p}_xoff.nic"]
    return names


IRDMA_HW_COUNTERS = [
    "ip4InOctets", "ip4InPkts", "ip4InDiscards", "ip4OutOctets", "ip4OutPkts", "ip6InOctets", "ip6InPkts",
    "ip6OutOctets", "ip6OutPkts", "tcpRetransSegs", "tcpInSegs", "tcpOutSegs", "InRdmaReads", "InRdmaSends",
    "InRdmaWrites", "OutRdmaReads", "OutRdmaSends", "OutRdmaWrites", "RdmaBnd", "RdmaInv", "RxUDP", "TxUDP",
    "RxVlanErrors", "RxECNMrkd", "cnpHandled", "cnpIgnored", "cnpSent", "lifespan",
]

DRIVERS = {"mlx5": ("mlx5_core", "mlx5_"), "bnxt": ("bnxt_en", "bnxt_re"), "irdma": ("ice", "irdma")}

# Typical rates per second of traffic-driven counters (per NIC); everything else stays small.
_RATES = {
    "bytes": 2.0e9, "packets": 5.0e5, "pause": 40, "pause_duration": 2000, "duration_us": 2000,
    "cnp": 300, "ecn": 600,
}


@dataclass
class NicPort:
    device: str
    port: int
    netdev: str
    driver: str  # the PCI/netdev driver: mlx5_core, bnxt_en, ice
    ethtool: dict[str, int]
    hw_counters: dict[str, int]
    state: str = "ACTIVE"
    physical_state: str = "LINK_UP"
    link_layer: str = "Ethernet"

    @property
    def state_code(self) -> str:
        return {"DOWN": "1", "INIT": "2", "ARMED": "3", "ACTIVE": "4"}.get(self.state, "0")


@dataclass
class RoceHost:
    name: str
    ports: list[NicPort] = field(default_factory=list)
    seed: int = 0

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    # -- construction ----------------------------------------------------------------------------

    @classmethod
    def build(cls, name: str, vendor: str = "mlx5", nics: int = 8, pfc_priorities: tuple[int, ...] = (3,),
              seed: int = 0) -> RoceHost:
        """A host with ``nics`` single-port RoCE NICs of one vendor (mlx5 | bnxt | irdma)."""
        driver, _ = DRIVERS[vendor]
        host = cls(name, seed=seed)
        for i in range(nics):
            if vendor == "mlx5":
                device, netdev = f"mlx5_{i}", f"ens{i + 1}f0np0"
                eth = _mlx5_ethtool(pfc_priorities, global_pause=not pfc_priorities)
                hw = MLX5_HW_COUNTERS
            elif vendor == "bnxt":
                device, netdev = f"bnxt_re{i}", f"ens{i + 1}f0np0"
                eth, hw = _bnxt_ethtool(pfc_priorities), BNXT_RE_HW_COUNTERS
            else:
                device, netdev = f"irdma{i}", f"ens{i + 1}f0"
                eth, hw = _ice_ethtool(), IRDMA_HW_COUNTERS
            host.ports.append(NicPort(device, 1, netdev, driver, {n: 0 for n in eth},
                                      {n: 10 if n == "lifespan" else 0 for n in hw}))
        return host

    def port(self, device: str, port: int = 1) -> NicPort:
        for p in self.ports:
            if p.device == device and p.port == port:
                return p
        raise KeyError(f"{device}/{port}")

    # -- counters over time ----------------------------------------------------------------------

    def advance(self, seconds: float = 1.0) -> None:
        """Move every traffic counter as ``seconds`` of busy RoCE traffic would."""
        for p in self.ports:
            for table in (p.ethtool, p.hw_counters):
                for name in table:
                    if name == "lifespan" or name.startswith("active_"):
                        continue  # a setting and gauges, not counters
                    table[name] += int(self._rate(name) * seconds * self._rng.uniform(0.5, 1.5))

    @staticmethod
    def _rate(name: str) -> float:
        lowered = name.lower()
        for key in ("duration_us", "pause_duration", "pause", "cnp", "ecn"):
            if key in lowered:
                return _RATES[key]
        if "bytes" in lowered or "octets" in lowered:
            return _RATES["bytes"]
        if "packets" in lowered or "pkts" in lowered or "frames" in lowered:
            return _RATES["packets"]
        return 0.2

    def reset(self) -> None:
        """A driver reload: every counter starts again from zero."""
        for p in self.ports:
            for table in (p.ethtool, p.hw_counters):
                for name in table:
                    if name != "lifespan":
                        table[name] = 0

    # -- rendering -------------------------------------------------------------------------------

    def render_ethtool(self, netdev: str) -> str:
        for p in self.ports:
            if p.netdev == netdev:
                return "NIC statistics:\n" + "".join(f"     {k}: {v}\n" for k, v in p.ethtool.items())
        raise KeyError(netdev)

    def render_hw_counters(self, p: NicPort) -> str:
        """What ``grep -H . *`` prints inside the port's hw_counters directory (sorted, as the glob)."""
        return "".join(f"{k}:{v}\n" for k, v in sorted(p.hw_counters.items()))

    def render_rdma_statistic(self, as_json: bool = False) -> str:
        if as_json:
            rows = [{"ifindex": i, "ifname": p.device, "port": p.port, **p.hw_counters}
                    for i, p in enumerate(self.ports)]
            return json.dumps(rows, separators=(",", ":")) + "\n"
        return "".join(f"link {p.device}/{p.port} " + "".join(f"{k} {v} " for k, v in p.hw_counters.items()) + "\n"
                       for p in self.ports)

    def render_rdma_link(self, as_json: bool = False) -> str:
        if as_json:
            rows = [{"ifindex": i, "ifname": p.device, "port": p.port, "state": p.state,
                     "physical_state": p.physical_state, "netdev": p.netdev, "netdev_index": 10 + i}
                    for i, p in enumerate(self.ports)]
            return json.dumps(rows, separators=(",", ":")) + "\n"
        return "".join(f"link {p.device}/{p.port} state {p.state} physical_state {p.physical_state} "
                       f"netdev {p.netdev} \n" for p in self.ports)

    def render_dump(self, devices: tuple[str, ...] = (), mode: str = "sysfs", ethtool: bool = True,
                    counters: str = "all") -> str:
        """The roce_nic collector's remote script output for this host (sysfs or rdma mode); with
        ``counters="mapped"``, through the script's own host-side filter (the real ``awk``)."""
        text = self._render_dump(devices, mode, ethtool)
        if counters != "mapped":
            return text
        import subprocess

        from ..collectors.roce_nic import FILTER_AWK

        return subprocess.run(["awk", FILTER_AWK], input=text, capture_output=True, text=True, check=True,
                              env={**os.environ, "LC_ALL": "C"}, timeout=30).stdout

    def _render_dump(self, devices: tuple[str, ...], mode: str, ethtool: bool) -> str:
        out = [f"@@fabric-roce 1 {mode}"]
        netdevs: list[str] = []
        if mode == "rdma":
            out += ["@@rdma_link 0", *self.render_rdma_link(True).splitlines(),
                    "@@rdma_statistic 0", *self.render_rdma_statistic(True).splitlines()]
            netdevs = [p.netdev for p in self.ports]
        else:
            by_device: dict[str, list[NicPort]] = {}
            for p in self.ports:
                by_device.setdefault(p.device, []).append(p)
            wanted = list(devices) or sorted(by_device)
            for dev in wanted:
                if dev not in by_device:
                    out.append(f"@@missing {dev}")
                    continue
                out.append(f"@@device {dev} {by_device[dev][0].driver}")
                for p in sorted(by_device[dev], key=lambda q: q.port):
                    out.append(f"@@port {dev} {p.port} {p.netdev} {p.link_layer} {p.state_code}: {p.state}")
                    out.append(f"@@hw_counters {dev} {p.port}")
                    out += self.render_hw_counters(p).splitlines()
                    if p.netdev not in netdevs:
                        netdevs.append(p.netdev)
        if ethtool:
            for nd in netdevs:
                out.append(f"@@ethtool {nd} 0")
                out += self.render_ethtool(nd).splitlines()
        out.append("@@end")
        return "\n".join(out) + "\n"

    # -- files for a real sshd -------------------------------------------------------------------

    def write_sysfs(self, root: str | os.PathLike) -> None:
        """Write (or update) the /sys/class tree under ``root`` (bind-mounted on /sys/class)."""
        root = Path(root)
        for p in self.ports:
            dev = root / "infiniband" / p.device
            port_dir = dev / "ports" / str(p.port)
            (port_dir / "hw_counters").mkdir(parents=True, exist_ok=True)
            (port_dir / "gid_attrs" / "ndevs").mkdir(parents=True, exist_ok=True)
            (dev / "device" / "net" / p.netdev).mkdir(parents=True, exist_ok=True)
            driver_link = dev / "device" / "driver"
            if not driver_link.is_symlink():
                driver_link.symlink_to(f"../../../../bus/pci/drivers/{p.driver}")
            _write(port_dir / "state", f"{p.state_code}: {p.state}\n")
            _write(port_dir / "phys_state", "5: LinkUp\n" if p.physical_state == "LINK_UP" else "3: Disabled\n")
            _write(port_dir / "link_layer", f"{p.link_layer}\n")
            _write(port_dir / "gid_attrs" / "ndevs" / "0", f"{p.netdev}\n")
            for name, value in p.hw_counters.items():
                _write(port_dir / "hw_counters" / name, f"{value}\n")
            (root / "net" / p.netdev).mkdir(parents=True, exist_ok=True)

    def write_tool_outputs(self, data_dir: str | os.PathLike) -> None:
        """The files the fake tools print: ethtool/<netdev>, rdma/{link,statistic}{,.json}."""
        data = Path(data_dir)
        (data / "ethtool").mkdir(parents=True, exist_ok=True)
        (data / "rdma").mkdir(parents=True, exist_ok=True)
        for p in self.ports:
            _write(data / "ethtool" / p.netdev, self.render_ethtool(p.netdev))
        _write(data / "rdma" / "link", self.render_rdma_link())
        _write(data / "rdma" / "link.json", self.render_rdma_link(True))
        _write(data / "rdma" / "statistic", self.render_rdma_statistic())
        _write(data / "rdma" / "statistic.json", self.render_rdma_statistic(True))


def write_fake_tools(bin_dir: str | os.PathLike, data_dir: str | os.PathLike) -> None:
    """``ethtool`` and ``rdma`` programs that print the files under ``data_dir`` the way the real
    tools print (and fail: unknown netdev -> exit 1 with ethtool's message)."""
    bin_dir, data_dir = Path(bin_dir), Path(data_dir).resolve()
    bin_dir.mkdir(parents=True, exist_ok=True)
    ethtool = f"""#!/bin/sh
# Fake ethtool: only -S NETDEV, printing {data_dir}/ethtool/NETDEV.
if [ "$1" != "-S" ] || [ -z "$2" ]; then echo "ethtool: bad command line argument(s)" >&2; exit 1; fi
f="{data_dir}/ethtool/$2"
if [ ! -f "$f" ]; then echo "netlink error: no device matches name (offset 24)" >&2; echo "netlink error: No such device" >&2; exit 1; fi
exec cat "$f"
"""
    rdma = f"""#!/bin/sh
# Fake iproute2 rdma: [-j] link show | [-j] statistic show, printing {data_dir}/rdma/*.
suffix=""
if [ "$1" = "-j" ]; then suffix=".json"; shift; fi
case "$1 $2" in
  "link show") f="{data_dir}/rdma/link$suffix" ;;
  "statistic show"|"stat show") f="{data_dir}/rdma/statistic$suffix" ;;
  *) echo "Unknown parameter '$1'." >&2; exit 1 ;;
esac
[ -f "$f" ] || exit 0
exec cat "$f"
"""
    for name, text in (("ethtool", ethtool), ("rdma", rdma)):
        path = bin_dir / name
        path.write_text(text)
        path.chmod(0o755)


class CounterFiles:
    """A host's counters as files a kept-open descriptor can follow (the burst probe's view).

    ``root/sys/class/...`` is the host's sysfs tree (``write_sysfs``) and ``root/ethtool/<netdev>``
    its ``ethtool -S`` text (what the probe's ``--ethtool-dir`` reads where no driver answers the
    ioctl). ``update()`` rewrites every changed counter IN PLACE, one ``pwrite`` of a fixed-width
    value at offset 0 (same inode, same length, as a sysfs attribute reads), never by rename:
    a reader that keeps the file open sees each update.
    """

    WIDTH = 20  # fixed-width values: a rewrite never changes a file's length

    def __init__(self, host: RoceHost, root: str | os.PathLike):
        self.host = host
        self.root = Path(root)
        self.sys_root = self.root / "sys"
        self.ethtool_dir = self.root / "ethtool"
        host.write_sysfs(self.sys_root / "class")
        self.ethtool_dir.mkdir(parents=True, exist_ok=True)
        self._hw: dict[tuple[int, str], tuple[int, int]] = {}  # (port index, name) -> (fd, last value)
        self._eth: dict[int, tuple[int, list[str], list[int]]] = {}  # port index -> (fd, names, last values)
        for k, p in enumerate(host.ports):
            hw_dir = self.sys_root / "class" / "infiniband" / p.device / "ports" / str(p.port) / "hw_counters"
            for name, value in p.hw_counters.items():
                fd = os.open(hw_dir / name, os.O_RDWR)
                os.pwrite(fd, b"%0*d\n" % (self.WIDTH, value), 0)
                os.ftruncate(fd, self.WIDTH + 1)
                self._hw[(k, name)] = (fd, value)
            names = list(p.ethtool)
            fd = os.open(self.ethtool_dir / p.netdev, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
            values = [p.ethtool[n] for n in names]
            os.pwrite(fd, self._render(names, values), 0)
            self._eth[k] = (fd, names, values)

    def _render(self, names: list[str], values: list[int]) -> bytes:
        return ("NIC statistics:\n" + "".join(f"     {n}: {v:{self.WIDTH}d}\n" for n, v in zip(names, values))).encode()

    def update(self) -> int:
        """Write what changed since the last update; returns how many files were written."""
        written = 0
        pwrite = os.pwrite
        for k, p in enumerate(self.host.ports):
            for name, value in p.hw_counters.items():
                key = (k, name)
                fd, last = self._hw[key]
                if value != last:
                    pwrite(fd, b"%0*d\n" % (self.WIDTH, value), 0)
                    self._hw[key] = (fd, value)
                    written += 1
            fd, names, last_values = self._eth[k]
            values = [p.ethtool[n] for n in names]
            if values != last_values:
                pwrite(fd, self._render(names, values), 0)
                self._eth[k] = (fd, names, values)
                written += 1
        return written

    def close(self) -> None:
        for fd, _ in self._hw.values():
            os.close(fd)
        for fd, _, _ in self._eth.values():
            os.close(fd)
        self._hw.clear()
        self._eth.clear()


# The lab host's python3: it runs the probe it was sent, unchanged, with this host's root standing
# for "/" (the probe's default sysfs root "/sys" becomes ROOT/sys), as a chroot would.
_PROBE_HOST = """
import os, sys
root, source, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
probe = {"__name__": "fabric_burst_probe"}
exec(compile(source, "<burst probe>", "exec"), probe)
probe["Probe"].__init__.__defaults__ = (os.path.join(root, "sys"), None)
sys.exit(probe["main"](argv))
"""


def burst_probe_argv(files: CounterFiles, argv: list[str], probe_source: str) -> list[str] | None:
    """The local command that answers ``python3 -c <probe> fabric-burst WINDOW_MS COLUMN...`` on this
    lab host: the probe as sent (only the exporter's own ``probe_source``, as the SSH guard allows)
    reading ``files``; ethtool statistics come from the host's ``ethtool -S`` files (no driver
    answers the ioctl here). None for any other command."""
    import sys

    if len(argv) < 5 or argv[:2] != ["python3", "-c"] or argv[3] != "fabric-burst" or argv[2] != probe_source:
        return None
    rest = argv[5:]
    if rest[:1] == ["--ethtool-dir"]:
        rest = rest[2:]
    return [sys.executable, "-c", _PROBE_HOST, str(files.root), argv[2], "fabric-burst", argv[4],
            "--ethtool-dir", str(files.ethtool_dir), *rest]


def _write(path: Path, text: str) -> None:
    """Replace a file whole (rename), so a concurrent reader never sees half a value."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------
# An in-process SSH server answering the roce_nic collector as these hosts would (lab, benchmark)


def answer(host: RoceHost, command: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) a host would give for the collector's command, or ``true``.

    The collector sends ``timeout -k 2 N sh -c <script> fabric-roce MODE ETHTOOL COUNTERS [DEVICE...]``;
    the script's output for this host is ``render_dump``. Anything else is "not found" (127).
    """
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return 2, "", "sh: syntax error\n"
    if words[:2] == ["timeout", "-k"]:
        words = words[4:]  # timeout -k 2 N ...
    if words == ["true"]:
        return 0, "", ""
    if "fabric-roce" in words:
        args = words[words.index("fabric-roce") + 1:]
        mode = args[0] if args else "sysfs"
        with_ethtool = (args[1] if len(args) > 1 else "1") == "1"
        counters = args[2] if len(args) > 2 else "all"
        return 0, host.render_dump(tuple(args[3:]), mode if mode in ("sysfs", "rdma") else "sysfs", with_ethtool,
                                   counters), ""
    return 127, "", f"sh: 1: {words[0] if words else ''}: not found\n"


async def serve(hosts: list[RoceHost], host_key_file: str, authorized_keys_file: str,
                advance_seconds: float = 0.0):
    """Listen on one port per host on 127.0.0.1 (public-key auth).

    Returns ({host name: port}, the ``SimulatedHosts`` server, whose ``stop()`` closes them all).

    ``advance_seconds`` > 0 moves a host's counters by that much before each answer, so repeated
    polls see traffic.
    """
    import shlex

    from .ssh_hosts import SimulatedHosts

    by_name = {h.name: h for h in hosts}

    async def reply(name: str, argv: list[str]) -> tuple[int, str, str]:
        if advance_seconds:
            by_name[name].advance(advance_seconds)
        return answer(by_name[name], shlex.join(argv))

    server = SimulatedHosts(Path(host_key_file).parent, reply, host_key_file=host_key_file,
                            authorized_keys_file=authorized_keys_file)
    return await server.start(list(by_name)), server


def _main(argv: list[str] | None = None) -> None:
    """``python -m fabric_exporter.lab.roce_host --hosts 200 ...``: serve simulated GPU hosts over
    SSH and write {name: port} as JSON to --ports-file once listening."""
    import argparse
    import asyncio

    ap = argparse.ArgumentParser(description=_main.__doc__)
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--nics", type=int, default=8)
    ap.add_argument("--vendor", default="mlx5", choices=sorted(DRIVERS))
    ap.add_argument("--prefix", default="gpu-")
    ap.add_argument("--host-key", required=True)
    ap.add_argument("--authorized-keys", required=True)
    ap.add_argument("--ports-file", required=True)
    ap.add_argument("--advance-seconds", type=float, default=1.0)
    args = ap.parse_args(argv)

    async def run() -> None:
        hosts = [RoceHost.build(f"{args.prefix}{i + 1:03d}", args.vendor, nics=args.nics, seed=i)
                 for i in range(args.hosts)]
        for h in hosts:
            h.advance(60)
        ports, _ = await serve(hosts, args.host_key, args.authorized_keys, advance_seconds=args.advance_seconds)
        tmp = Path(args.ports_file + ".tmp")
        tmp.write_text(json.dumps(ports))
        os.replace(tmp, args.ports_file)
        await asyncio.Event().wait()  # until killed

    asyncio.run(run())


__all__ = ["CounterFiles", "NicPort", "RoceHost", "answer", "burst_probe_argv", "serve", "write_fake_tools", "DRIVERS"]

if __name__ == "__main__":
    _main()
