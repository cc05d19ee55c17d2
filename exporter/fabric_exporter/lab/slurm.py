"""A real Slurm on loopback for the lab and the tests: munged, slurmctld and one ``slurmd -N NAME``
per simulated host, every node at 127.0.0.1 on its own port.

Everything lives in the work dir: munge key, socket, seed, pid and log; slurm.conf and its state,
spool, pid and log files (the two Unix sockets' directories -- munged's, slurmd's spool -- move to a
short directory in the temp dir when the work dir's path is too long for a socket). Nothing under
/etc/munge, /var/lib/slurm or /run is read or written (munged gets every path as an option; Slurm
reads ``-f`` / ``SLURM_CONF``; AuthInfo names the munge socket). ``env()`` is what a client (``sbatch``, ``squeue``, the slurm_jobs collector with
transport local) needs: ``SLURM_CONF``.

Debian's packages (``slurmctld slurmd slurm-client munge``, scripts/setup-deps). The processes run
as the current user; munged and slurmd refuse nothing as root here (the lab's hosts are all local).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..parsers.hostlist import expand
from .ports import free_tcp_ports

CLUSTER = "fabriclab"


def tool(name: str) -> str:
    path = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.path.exists(p)), None)
    if path is None:
        raise RuntimeError(f"{name} is not installed (scripts/setup-deps installs slurmctld slurmd slurm-client munge)")
    return path


@dataclass
class SlurmLab:
    """munged + slurmctld + one slurmd per node name, in ``workdir``."""

    workdir: Path
    nodes: tuple[str, ...]
    cpus: int = 16  # jobs share a node on distinct cores (select/cons_tres CR_Core)
    partition: str = "gpu"
    procs: list[subprocess.Popen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.workdir = Path(self.workdir).resolve()
        self.conf = self.workdir / "slurm.conf"
        # Unix socket paths hold at most 107 bytes: slurmstepd's (spool/NODE/NODE_JOB.STEP) and munged's
        # live in a short directory of their own in the temp dir when the work dir's path is long
        longest = len(str(self.workdir / "spool")) + 2 * max((len(n) for n in self.nodes), default=0) + 24
        self._short: Path | None = None if longest < 100 else Path(tempfile.mkdtemp(prefix="fx-slurm-"))
        self.sockets_dir = self._short or self.workdir
        self.munge_socket = self.sockets_dir / "munge" / "munge.socket"

    # -- files --------------------------------------------------------------------------------

    def _write_files(self) -> None:
        w = self.workdir
        for d in ("munge", "state", "spool", "log", "run"):
            (w / d).mkdir(parents=True, exist_ok=True)
        (self.sockets_dir / "munge").mkdir(parents=True, exist_ok=True)
        (self.sockets_dir / "spool").mkdir(parents=True, exist_ok=True)
        (w / "munge").chmod(0o700)
        key = w / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        for n in self.nodes:
            (self.sockets_dir / "spool" / n).mkdir(exist_ok=True)
        ctld_port, *node_ports = free_tcp_ports(1 + len(self.nodes))
        user = _user()
        lines = [
            f"ClusterName={CLUSTER}",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            f"SlurmUser={user}",
            f"SlurmdUser={user}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={w / 'state'}",
            f"SlurmdSpoolDir={self.sockets_dir / 'spool'}/%n",
            f"SlurmctldPidFile={w / 'run' / 'slurmctld.pid'}",
            f"SlurmdPidFile={w / 'run'}/slurmd-%n.pid",
            f"SlurmctldLogFile={w / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={w / 'log'}/slurmd-%n.log",
            f"PlugStackConfig={w / 'plugstack.conf'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SwitchType=switch/none",
            "MpiDefault=none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "ReturnToService=2",
            "SlurmdParameters=config_overrides",  # many slurmd on one machine: the configured CPUs, not the real ones
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            "InactiveLimit=0",
            "MinJobAge=2",  # finished jobs leave squeue's output soon
            "KillWait=1",
            "SchedulerParameters=sched_interval=1,bf_interval=1",
        ]
        lines += [f"NodeName={n} NodeAddr=127.0.0.1 NodeHostname=localhost Port={p} CPUs={self.cpus} State=UNKNOWN"
                  for n, p in zip(self.nodes, node_ports)]
        lines.append(f"PartitionName={self.partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
        self.conf.write_text("\n".join(lines) + "\n")
        (w / "plugstack.conf").write_text("")

    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    # -- processes ----------------------------------------------------------------------------

    def _spawn(self, argv: list[str], log: str) -> subprocess.Popen:
        out = open(self.workdir / "log" / log, "ab")
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=self.env(), start_new_session=True)
        out.close()
        self.procs.append(p)
        return p

    def start(self, timeout: float = 60.0) -> None:
        self._write_files()
        m = self.workdir / "munge"
        self._spawn([tool("munged"), "-F", "--force", f"--socket={self.munge_socket}", f"--key-file={m / 'munge.key'}",
                     f"--pid-file={m / 'munged.pid'}", f"--seed-file={m / 'munged.seed'}",
                     f"--log-file={m / 'munged.log'}"], "munged.out")
        self._wait(lambda: self.munge_socket.exists(), timeout, "munged's socket")
        self._spawn([tool("slurmctld"), "-D", "-c", "-i", "-f", str(self.conf)], "slurmctld.out")
        self._wait(self._controller_up, timeout, "slurmctld")
        for n in self.nodes:
            self._spawn([tool("slurmd"), "-D", "-N", n, "-f", str(self.conf)], f"slurmd-{n}.out")
        self._wait(self._nodes_idle, timeout, "every slurmd registered")

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"slurm lab: {dead[0].args[0]} exited ({dead[0].returncode}) waiting for {what}; "
                                   f"logs in {self.workdir / 'log'}")
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"slurm lab: no {what} after {timeout:.0f} s; logs in {self.workdir / 'log'}")

    def run(self, *argv: str, timeout: float = 20.0, check: bool = True) -> subprocess.CompletedProcess:
        """A Slurm client command against this cluster."""
        return subprocess.run(list(argv), env=self.env(), capture_output=True, text=True, timeout=timeout, check=check)

    def _controller_up(self) -> bool:
        return self.run("scontrol", "ping", timeout=10, check=False).stdout.count("UP") > 0

    def _nodes_idle(self) -> bool:
        r = self.run("sinfo", "-h", "-N", "-o", "%N %t", timeout=10, check=False)
        states = dict(line.split() for line in r.stdout.splitlines() if len(line.split()) == 2)
        return set(states) == set(self.nodes) and all(s in ("idle", "mix", "alloc") for s in states.values())

    # -- jobs -----------------------------------------------------------------------------------

    def submit(self, nodes: list[str], name: str = "train", cpus_per_node: int = 1, seconds: int = 3600) -> str:
        """An sbatch job holding exactly ``nodes`` (one task each); its job id."""
        r = self.run("sbatch", "--parsable", f"--job-name={name}", f"--nodes={len(nodes)}",
                     f"--nodelist={','.join(nodes)}", "--ntasks-per-node=1", f"--cpus-per-task={cpus_per_node}",
                     f"--output={self.workdir / 'log' / 'job-%j.out'}",
                     f"--chdir={self.workdir}", f"--wrap=sleep {seconds}")
        return r.stdout.strip().split(";")[0]

    def cancel(self, *job_ids: str) -> None:
        if job_ids:
            self.run("scancel", *job_ids)

    def running(self) -> dict[str, list[str]]:
        """job id -> its nodes, per squeue's text form (a check independent of the collector's JSON)."""
        r = self.run("squeue", "-h", "-t", "R", "-o", "%i %N")
        return {jid: expand(nodes) for jid, nodes in (line.split() for line in r.stdout.splitlines())}

    def wait_running(self, job_ids: list[str], timeout: float = 30.0) -> None:
        self._wait(lambda: set(job_ids) <= set(self.running()), timeout, f"jobs {job_ids} running")

    def _cancel_all(self, timeout: float = 15.0) -> None:
        """Every job cancelled and gone before the daemons stop: a slurmd stopped under a running job
        leaves its slurmstepd and the job's processes behind (by design: a slurmd restart must not
        kill jobs), and those would outlive the lab."""
        if not self.procs or any(p.poll() is not None for p in self.procs):
            return
        try:
            self.run("scancel", f"--partition={self.partition}", "--full", timeout=10, check=False)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                r = self.run("squeue", "-h", "-o", "%i", timeout=10, check=False)
                if r.returncode != 0 or not r.stdout.strip():
                    return
                time.sleep(0.2)
        except (OSError, subprocess.SubprocessError):
            pass  # stopping goes on: the daemons must stop whatever the jobs do

    def stop(self) -> None:
        self._cancel_all()
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in reversed(self.procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=5)
        self.procs.clear()
        if self._short is not None:
            shutil.rmtree(self._short, ignore_errors=True)

    def __enter__(self) -> SlurmLab:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name
