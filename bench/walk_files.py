"""The "PortXmitWait walk": how many source files under exporter/ one steady InfiniBand poll runs through.

    PYTHONPATH=exporter:bench python bench/walk_files.py --recording /tmp/ib.rec [--copies 1] [--list]

Replays the tool outputs recorded by ``bench_infiniband.py --recording FILE`` (no ibsim, no tools):
a first poll (the discovery) and warm-up polls, then one steady-state poll plus its snapshot render
(as the scheduler does when a poll lands) under ``sys.setprofile`` / ``threading.setprofile``
(a large output is parsed on a worker thread). Every Python function called records its code's
``co_filename``; the figure is the number of distinct files below the exporter/ directory the
``fabric_exporter`` package was imported from: the files a reader follows to see how a counter such
as PortXmitWait gets from the tool's text to /metrics. ``--list`` prints them.

Point PYTHONPATH at another checkout's exporter/ to count that version on the same recording.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import fabric_exporter  # noqa: E402
from bench_infiniband import _render, _Script, _scaled  # noqa: E402
from tests.harness.infiniband import CollectorHarness, group_for  # noqa: E402

WARM_UP_POLLS = 3  # after the first (discovery) poll: per-port memos built, a previous snapshot to render on


def steady_poll_files(recorded: dict, copies: int) -> set[str]:
    """The files under exporter/ whose functions run during one steady replayed poll and its render."""
    exporter_root = Path(fabric_exporter.__file__).resolve().parent.parent
    steady = {kind: [_scaled(r, copies) for r in runs] for kind, runs in recorded["steady"].items()}
    script = _Script()
    harness = CollectorHarness(group_for({"env": recorded["env"]}, timeout="25s"))
    harness.collector.tools._runner = lambda: script

    def answer(turn: int) -> None:
        script.answers = {kind: runs[turn % len(runs)] for kind, runs in steady.items()}

    filenames: set[str] = set()
    recording = False

    def profile(frame, event, _arg):
        if recording and event == "call":
            filenames.add(frame.f_code.co_filename)

    # Installed before the first poll, so the parse pool's worker threads (started by the first
    # large output) carry it too; it records only during the measured poll.
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        previous = None
        for turn in range(1 + WARM_UP_POLLS):
            answer(turn)
            previous = _render(harness.poll().samples, previous)
        answer(1 + WARM_UP_POLLS)
        recording = True
        _render(harness.poll().samples, previous)
        recording = False
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    files = set()
    for name in filenames:
        path = Path(name).resolve()
        if path.is_relative_to(exporter_root):
            files.add(str(path.relative_to(exporter_root)))
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recording", required=True, help="a bench_infiniband.py --recording file")
    ap.add_argument("--copies", type=int, default=1, help="replay the fabric this many times larger")
    ap.add_argument("--list", action="store_true", help="print the files, one per line")
    args = ap.parse_args()
    with open(args.recording, "rb") as f:
        recorded = pickle.load(f)
    files = steady_poll_files(recorded, args.copies)
    print(f"files under exporter/ in one steady replayed IB poll + render: {len(files)}")
    if args.list:
        for name in sorted(files):
            print(f"  {name}")


if __name__ == "__main__":
    main()
