"""An independent gNMI client for the tests: pygnmi (its own bundled stubs, its own decoding) in a
process of its own -- pygnmi cannot share a process with gnmi-pb (both register gnmi_ext.proto).

    python pygnmi_subscribe.py PORT TARGET SECONDS XPATH[@on_change] [XPATH ...]

Subscribes STREAM to the paths (TARGET "" for none), SAMPLE every 1 s or ON_CHANGE, and prints every response
pygnmi decodes, one JSON object per line, for SECONDS; then exits at once (pygnmi's reader thread
would complain about the closed channel)."""

import json
import os
import sys
import time

from pygnmi.client import gNMIclient


def main() -> None:
    port, target, seconds, paths = int(sys.argv[1]), sys.argv[2] or None, float(sys.argv[3]), sys.argv[4:]
    end = time.monotonic() + seconds
    with gNMIclient(target=("127.0.0.1", port), insecure=True, gnmi_timeout=10) as gc:
        subs = []
        for spec in paths:
            path, _, mode = spec.partition("@")
            subs.append({"path": path, "mode": "on_change"} if mode == "on_change" else
                        {"path": path, "mode": "sample", "sample_interval": 1_000_000_000})
        sub = {"subscription": subs,
               "mode": "stream", "encoding": "json_ietf"}
        for response in gc.subscribe2(subscribe=sub, target=target):
            print(json.dumps(response), flush=True)
            if time.monotonic() >= end:
                break
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
