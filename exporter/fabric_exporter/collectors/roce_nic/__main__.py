"""Print the remote script, e.g. to install it as a forced command: python -m fabric_exporter.collectors.roce_nic"""

import sys

from .script import REMOTE_SCRIPT

sys.stdout.write("#!/bin/sh\n# fabric-exporter roce_nic remote script (usage: sysfs|rdma 1|0 [DEVICE...])\n"
                 + REMOTE_SCRIPT)
