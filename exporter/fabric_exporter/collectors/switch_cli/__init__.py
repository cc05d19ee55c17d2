"""switch_cli: RoCE switch counters from the switch's own CLI over SSH (SONiC; Cumulus ethtool; Arista EOS).

What SNMP does not give: ECN-marked packets per queue (SONiC's SNMP has none), WRED drops and the
PFC watchdog's storms. One poll is ONE command on the pooled SSH connection: a small POSIX sh
script runs every selected ``show`` command, each between marker lines carrying a per-poll nonce
and the command's exit status, so one session (one channel) carries the whole poll.

* SONiC: ``show pfc counters``, ``show queue counters [--json]``, ``show queue wredcounters
  [--json]``, ``show pfcwd stats``. With ``json: auto`` (default) ``--json`` is tried first; a
  release without it (usage error) is remembered and the text table used from then on.
  Buffer watermarks (``queue_watermark``, ``pg_watermark``, ``buffer_pool_watermark``: ``show queue
  [persistent-]watermark unicast|multicast|all``, ``show priority-group [persistent-]watermark
  shared|headroom``, ``show buffer_pool|headroom-pool [persistent-]watermark``) and PFC history
  (``pfc_history``: ``show pfc counters --history``) when the ``commands`` option names them; one
  option name can stand for several show commands (a section of the batch each). Opt-in too:
  ``show lldp table`` (command ``lldp``): each interface's LLDP neighbour (collectors/lldp.py).
* Cumulus: ``ethtool -S`` of every ``swp*`` interface (HwIfIn/OutPfc<p>Pkt, HwIfOutQ<q>WredDrops,
  HwIfIn/OutDiscards, HwIfInBufferDrops, HwIfOutQDrops), and with ``commands: [..., nvue_roce]``
  NVUE's ``nv show interface <swp> qos roce counters`` (ECN marks, RoCE/CNP packets and their
  buffer discards per port).
* EOS: ``show interfaces counters discards | json``, ``show interfaces counters queue``,
  ``show priority-flow-control counters | json`` (PFC frames per interface, all priorities) and
  ``show qos interfaces ecn counters queue | json`` (ECN-marked packets per tx-queue).
  EOS's SSH lands in its CLI, not a shell: no script, no ``sh -c``; each command is its own exec
  request on the pooled connection (``run_line``), so the dialect needs the ``ssh`` transport.

A command that fails or prints what its parser cannot read makes the poll partial (its samples are
left out, the problem is reported); when every command fails the poll fails.

Dialects are a table (``DIALECTS``): each names its commands, their parsers and the mapping of the
parsed records to samples (``CliCommand``), and how a poll runs them -- one batched script of named
commands (SONiC), ethtool per interface (Cumulus), or one CLI exec per command (EOS). A new switch
OS is a new entry.

Modules: ``samples`` (parsed records to catalog samples, with the switch's kept ``SwitchLabels``), ``collector`` (the dialect table,
the batched scripts, the collector).
"""

from .collector import (
    CliCommand,
    CUMULUS,
    DIALECTS,
    Dialect,
    POOL_WATERMARKS,
    SONIC,
    SwitchCliCollector,
    SwitchCliOptions,
    build_cumulus_script,
    build_script,
)
from .samples import (
    EOS_DISCARD_METRICS,
    QUEUE_METRICS,
    cumulus_samples,
    eos_ecn_samples,
    eos_port_samples,
    eos_queue_samples,
    nvue_roce_samples,
    pfc_history_samples,
    pfc_samples,
    pfcwd_samples,
    pg_watermark_samples,
    pool_watermark_samples,
    queue_samples,
    queue_watermark_samples,
    SwitchLabels,
)

__all__ = [
    "CliCommand",
    "CUMULUS",
    "DIALECTS",
    "Dialect",
    "POOL_WATERMARKS",
    "SONIC",
    "SwitchCliCollector",
    "SwitchCliOptions",
    "build_cumulus_script",
    "build_script",
    "EOS_DISCARD_METRICS",
    "QUEUE_METRICS",
    "cumulus_samples",
    "eos_ecn_samples",
    "eos_port_samples",
    "eos_queue_samples",
    "nvue_roce_samples",
    "pfc_history_samples",
    "pfc_samples",
    "pfcwd_samples",
    "pg_watermark_samples",
    "pool_watermark_samples",
    "queue_samples",
    "queue_watermark_samples",
    "SwitchLabels",
]
