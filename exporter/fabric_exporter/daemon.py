"""The daemon: config -> scheduler -> snapshots -> HTTP, with signal handling and reloads.

SIGTERM/SIGINT stop it (in-flight polls are cancelled; it exits within a few seconds).
SIGHUP reloads the config; an invalid config is rejected, logged and counted, and the old one keeps
running. Hosts files are re-read when they change. A reload closes what the new config no longer
uses: the tasks of retired targets, the SSH connections of hosts removed or whose credential changed.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import resource
import signal
import socket
import time


from .collectors import registry
from .config.loader import load_config, parse_listen_address
from .config.model import Config, ConfigError
from .scheduler import Scheduler
from .sharding import Shard
from .gcpacing import PACED_THRESHOLDS, GcPacer
from .looplag import LoopLag
from .serving.selfmetrics import ReloadStatus, SelfMetrics
from .serving.store import SnapshotStore
from .transport.factory import Transports
from .serving.web import ConnectionGuard, WebSecurity, build_app, load_web_config
from .serving.web_thread import DaemonCall, WebThread

log = logging.getLogger("fabric_exporter.daemon")

HOSTS_FILE_CHECK_SECONDS = 5.0


class SystemdNotifier:
    """sd_notify(3) without libsystemd: READY/RELOADING/STOPPING/WATCHDOG datagrams on NOTIFY_SOCKET."""

    def __init__(self) -> None:
        self.address = os.environ.get("NOTIFY_SOCKET")
        if self.address and self.address.startswith("@"):
            self.address = "\0" + self.address[1:]  # abstract namespace
        usec = os.environ.get("WATCHDOG_USEC")
        self.watchdog_interval = int(usec) / 2e6 if usec and usec.isdigit() else None

    def notify(self, message: str) -> None:
        if not self.address:
            return
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.connect(self.address)
                sock.sendall(message.encode())
        except OSError as e:
            log.warning("sd_notify failed", extra={"fields": {"error": str(e)}})


def _raise_fd_limit() -> None:
    """Soft RLIMIT_NOFILE up to the hard limit (as Go programs do): fds for SSH, SNMP and HTTP."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = hard if hard != resource.RLIM_INFINITY else 65536
        if soft != resource.RLIM_INFINITY and soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(target, 1 << 20), hard))
    except (ValueError, OSError):
        pass


def freeze_long_lived() -> int:
    """Move every object alive now out of the cyclic GC's reach (``gc.freeze``); returns how many
    are frozen in all. Called once the daemon has started and again once every target was polled:
    the modules, config, collectors and their tables live as long as the process, and a full
    collection that walks them all (~90k objects, ~60 ms of CPU) stalls the event loop, and with it
    any scrape waiting then. Frozen objects are still freed by reference counting; only a cycle
    among them that dies later is never collected (a reload's old config, at most, once)."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


class Daemon:
    def __init__(self, config_path: str, *, listen_address: str | None = None, web_config_file: str | None = None,
                 shard: Shard | None = None):
        self.config_path = config_path
        self.listen_override = listen_address
        self.web_config_override = web_config_file
        self.store = SnapshotStore()
        self.transports = Transports()
        self.reload_status = ReloadStatus()
        self.loop_lag = LoopLag()
        self.gc_pacer = GcPacer()
        self.self_metrics = SelfMetrics(self.reload_status, self.loop_lag)
        self.scheduler = Scheduler(self.transports, self.store, shard=shard, self_metrics=self.self_metrics)
        self._stop = asyncio.Event()
        self._reload_lock = asyncio.Lock()
        self._hosts_mtimes: dict[str, float] = {}
        self.notifier = SystemdNotifier()
        self.bound_port: int | None = None

    # -- config ---------------------------------------------------------------------------------

    def _load(self) -> Config:
        return load_config(self.config_path, options_parsers=registry())

    def _remember_hosts_files(self, config: Config) -> None:
        self._hosts_mtimes = {}
        for g in config.targets:
            if g.hosts_file:
                try:
                    self._hosts_mtimes[g.hosts_file] = os.stat(g.hosts_file).st_mtime
                except OSError:
                    self._hosts_mtimes[g.hosts_file] = 0.0

    async def reload(self, why: str = "SIGHUP") -> bool:
        async with self._reload_lock:
            self.notifier.notify("RELOADING=1")
            try:
                config = await asyncio.to_thread(self._load)
            except ConfigError as e:
                self.reload_status.record(False)
                log.error("config reload rejected; keeping the running config",
                          extra={"fields": {"trigger": why, "problems": "; ".join(e.problems)}})
                self.notifier.notify("READY=1")
                return False
            self.scheduler.apply(config)
            self._remember_hosts_files(config)
            self.reload_status.record(True)
            # What the old config used and this one does not (sessions of removed hosts or of a
            # rotated credential, sockets, tasks) is closed now, not left to keepalives for ever.
            await self.scheduler.settle()
            closed = await self.transports.release_unused(config)
            log.info("config reloaded", extra={"fields": {"trigger": why, "targets": len(self.scheduler.states),
                                                          "ssh_connections_closed": closed}})
            self.notifier.notify("READY=1")
            return True

    async def _watch_hosts_files(self) -> None:
        while True:
            await asyncio.sleep(HOSTS_FILE_CHECK_SECONDS)
            for path, mtime in list(self._hosts_mtimes.items()):
                try:
                    now = os.stat(path).st_mtime
                except OSError:
                    now = 0.0
                if now != mtime:
                    await self.reload(why=f"hosts file changed: {path}")
                    break

    async def _freeze_when_ready(self, limit: float = 600.0) -> None:
        """Freeze again once every target was polled (its collector's tables are built then), or
        after ``limit`` seconds at the latest."""
        deadline = time.monotonic() + limit
        while not self.scheduler.ready() and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        frozen = freeze_long_lived()
        log.debug("long-lived objects frozen", extra={"fields": {"objects": frozen}})

    async def _watchdog(self) -> None:
        # Pet only while the event loop is healthy: a wedged loop stops the pets and systemd restarts us.
        while True:
            self.notifier.notify("WATCHDOG=1")
            await asyncio.sleep(self.notifier.watchdog_interval)

    # -- run ------------------------------------------------------------------------------------

    def exposition_parts(self, gzip: bool = False) -> list[bytes]:
        """/metrics as pieces to concatenate: the targets' snapshots, then the self-metrics. Called
        from the web thread, under the store's lock (what changes them holds it too): a scrape does
        not wait for a turn of the daemon's loop, which at 10k GPUs can be a second behind."""
        with self.store.lock:
            now = time.monotonic()
            return self.store.parts(now, gzip) + self.self_metrics.parts(now, gzip)

    def request_stop(self) -> None:
        self._stop.set()

    async def run(self) -> int:
        try:
            config = self._load()
        except ConfigError as e:
            for p in e.problems:
                log.error("invalid config", extra={"fields": {"problem": p}})
            return 2
        web_config_file = self.web_config_override or config.web.config_file
        try:
            security = load_web_config(web_config_file) if web_config_file else WebSecurity()
        except ConfigError as e:
            for p in e.problems:
                log.error("invalid web config", extra={"fields": {"problem": p}})
            return 2
        for cred in config.credentials.values():
            if getattr(cred, "insecure_ignore_host_key", False):
                log.warning("SSH host keys are NOT verified for this credential (lab use only)",
                            extra={"fields": {"credential": cred.name}})
        listen = self.listen_override or config.web.listen_address
        try:
            host, port = parse_listen_address(listen)
        except ValueError as e:  # --web.listen-address is not checked by check-config
            log.error("invalid listen address", extra={"fields": {"address": listen, "error": str(e)}})
            return 2

        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)
        loop.add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(self.reload()))

        _raise_fd_limit()
        self.connection_guard = ConnectionGuard(config.web.header_timeout, config.web.idle_timeout,
                                                config.web.max_connections)
        server = WebThread(build_app(self, security, call=DaemonCall(loop)), host, port,
                           guard=self.connection_guard, ssl_context=security.ssl_context,
                           keepalive_timeout=config.web.idle_timeout)
        try:
            self.bound_port = await server.start()
        except (OSError, ValueError, OverflowError) as e:  # a bad address is a logged error, never a traceback
            log.error("cannot listen", extra={"fields": {"address": listen,
                                                         "error": getattr(e, "strerror", None) or str(e)}})
            return 1
        self.scheduler.apply(config)
        self._remember_hosts_files(config)
        self.reload_status.record(True)
        log.info("fabric-exporter started", extra={"fields": {
            "listen": f"{host or '0.0.0.0'}:{self.bound_port}", "config": self.config_path,
            "targets": len(self.scheduler.states), "shard": str(self.scheduler.shard or "all"),
            "tls": bool(security.ssl_context),
            "basic_auth": bool(security.users)}})
        self.notifier.notify(f"READY=1\nMAINPID={os.getpid()}\nSTATUS=polling {len(self.scheduler.states)} targets")
        freeze_long_lived()
        thresholds_before = gc.get_threshold()
        gc.set_threshold(*PACED_THRESHOLDS)
        background = [asyncio.create_task(self.loop_lag.run(), name="loop-lag"),
                      asyncio.create_task(self.gc_pacer.run(), name="gc-pacer"),
                      asyncio.create_task(self._watch_hosts_files(), name="hosts-files"),
                      asyncio.create_task(self._freeze_when_ready(), name="gc-freeze")]
        if self.notifier.watchdog_interval:
            background.append(asyncio.create_task(self._watchdog(), name="watchdog"))
        try:
            await self._stop.wait()
        finally:
            log.info("stopping")
            gc.set_threshold(*thresholds_before)  # an embedding process (the tests) gets its own back
            self.notifier.notify("STOPPING=1")
            for t in background:
                t.cancel()
            await self.scheduler.stop(grace=2.0)
            # Bounded: the whole shutdown must fit systemd's and Kubernetes' stop timeouts.
            # A step past its limit is left: what it had not closed, the process's exit closes.
            for step, closing, limit in (("web server", server.stop(1.5), 2.5),
                                         ("SSH connections and SNMP sockets", self.transports.close(), 1.0)):
                try:
                    await asyncio.wait_for(closing, limit)
                except Exception as e:  # noqa: BLE001 - shutdown is best effort
                    log.warning("shutdown step did not finish cleanly", extra={"fields": {
                        "step": step, "limit_s": limit, "error": repr(e)}})
        return 0
