"""GPU hosts over SSH answering the roce_nic collector from recorded dumps, thousands per process.

The lab's host server (``lab.roce_host``) renders each answer from its counter model and splits the
2.5 KB command with ``shlex``: ~1 ms of its own CPU per poll, as much as the poller's SSH work, so a
whole-cluster bench on shared cores measured the simulator. This server answers from dumps recorded
once (``record``: what ``roce_host.answer`` gives the collector's command, at successive times):
a command is recognised by a substring and answered with ready text, host ``i`` with recording
``i % len(recordings)``, the host's n-th poll with that recording's ``n % epochs``-th dump (so
counters move, and go back when the epochs wrap, as after a driver reload).

One asyncssh server per host port (127.0.0.1, public-key auth, the lab's key files); ``commands``
counts the executions. ``python -m fabric_exporter.lab.replay_ssh --dumps DIR --hosts N ...``.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import asyncssh

from .roce_host import RoceHost, answer
from .ssh_hosts import SimulatedHosts

DUMP_MARK = "fabric-roce"
# The collector's default command ends with these arguments (sysfs mode, ethtool on, every device):
# the counters the rules map (``mapped``, the host's filter), or all of them (``all``, as an older
# release sends with no third word, or with expose_unmapped). Each is recorded.
DEFAULT_ARGS = "fabric-roce sysfs 1"
VARIANTS = {f"{DEFAULT_ARGS} mapped": "mapped", f"{DEFAULT_ARGS} all": "all", DEFAULT_ARGS: "all"}


def record(directory: str | os.PathLike, recordings: int = 16, epochs: int = 4, nics: int = 8,
           vendor: str = "mlx5", interval: float = 30.0, command: str = f"sh -c SCRIPT {DEFAULT_ARGS}") -> Path:
    """Write ``recordings`` hosts x ``epochs`` dumps as DIR/<recording>/<epoch>.dump (and the same
    through the host's unmapped-counter filter as <epoch>.mapped.dump): each what the lab host answers
    the collector's command, the host's counters advanced ``interval`` s in between."""
    root = Path(directory)
    for r in range(recordings):
        host = RoceHost.build(f"rec-{r:03d}", vendor, nics=nics, seed=r)
        host.advance(60)
        out = root / f"{r:03d}"
        out.mkdir(parents=True, exist_ok=True)
        for e in range(epochs):
            host.advance(interval)
            for suffix, variant in (("", "all"), (".mapped", "mapped")):
                status, text, _err = answer(host, f"{command} {variant}")
                if status:
                    raise RuntimeError(f"lab host answered {status}")
                (out / f"{e:02d}{suffix}.dump").write_text(text)
    return root


def load(directory: str | os.PathLike) -> list[list[dict[str, str]]]:
    """Per recording, per epoch: {variant: dump} ("all", and "mapped" when recorded)."""
    root = Path(directory)
    found = [[{"all": p.read_text(), **({"mapped": m.read_text()} if (m := p.with_suffix(".mapped.dump")).exists()
                                        else {})}
              for p in sorted(d.glob("*.dump")) if not p.name.endswith(".mapped.dump")]
             for d in sorted(root.iterdir()) if d.is_dir()]
    found = [r for r in found if r]
    if not found:
        raise ValueError(f"no recorded dumps under {root}")
    return found


class ReplayHosts(SimulatedHosts):
    """``SimulatedHosts`` whose answers are recorded dumps (see the module docstring)."""

    def __init__(self, workdir, recordings: list[list[dict[str, str]]], **keys):
        super().__init__(workdir, self._unused, **keys)
        self.recordings = recordings
        self._index: dict[str, int] = {}
        self._polls: dict[str, int] = {}

    @staticmethod
    async def _unused(host, argv):  # pragma: no cover - _handle answers without it
        raise AssertionError

    async def start(self, names: list[str]) -> dict[str, int]:
        self._index = {name: i % len(self.recordings) for i, name in enumerate(names)}
        return await super().start(names)

    def reply_for(self, host: str, command: str) -> tuple[int, str]:
        if command == "true" or command.endswith(" true"):
            return 0, ""
        if DUMP_MARK in command:
            variant = next((v for tail, v in VARIANTS.items() if command.rstrip().endswith(tail)), None)
            epochs = self.recordings[self._index[host]]
            n = self._polls.get(host, -1) + 1
            text = epochs[n % len(epochs)].get(variant) if variant else None
            if text is None:
                return 2, ""  # only the default command was recorded
            self._polls[host] = n
            return 0, text
        return 127, ""

    async def _handle(self, host: str, process: asyncssh.SSHServerProcess) -> None:
        self.commands += 1
        status, out = self.reply_for(host, process.command or "")
        try:
            if out:
                process.stdout.write(out)
            if status == 2:
                process.stderr.write("replay: no recording for these arguments\n")
            elif status == 127:
                process.stderr.write("sh: not found\n")
            process.exit(status)
        except (OSError, asyncssh.Error):
            pass


def _main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description="serve recorded roce_nic dumps over SSH, one port per host")
    ap.add_argument("--dumps", required=True, help="directory written by record()")
    ap.add_argument("--hosts", type=int, required=True)
    ap.add_argument("--prefix", default="gpu-")
    ap.add_argument("--host-key", required=True)
    ap.add_argument("--authorized-keys", required=True)
    ap.add_argument("--ports-file", required=True)
    args = ap.parse_args(argv)

    async def run() -> None:
        server = ReplayHosts(Path(args.host_key).parent, load(args.dumps), host_key_file=args.host_key,
                             authorized_keys_file=args.authorized_keys)
        ports = await server.start([f"{args.prefix}{i + 1:04d}" for i in range(args.hosts)])
        tmp = Path(args.ports_file + ".tmp")
        tmp.write_text(json.dumps(ports))
        os.replace(tmp, args.ports_file)
        await asyncio.Event().wait()

    asyncio.run(run())


__all__ = ["ReplayHosts", "load", "record"]

if __name__ == "__main__":
    _main()
