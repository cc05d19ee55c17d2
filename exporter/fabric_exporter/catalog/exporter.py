"""The daemon's own metrics: per-target poll health, build and config state."""

from .labels import TARGET
from .spec import MetricSpec

SRC = ("exporter",)

METRICS = [
    MetricSpec("fabric_up", "gauge", "", "1 if the target's last poll succeeded and its data is fresh, else 0.",
               (TARGET,), SRC),
    MetricSpec("fabric_poll_duration_seconds", "gauge", "seconds", "Wall time of the target's last poll.",
               (TARGET,), SRC),
    MetricSpec("fabric_last_poll_timestamp_seconds", "gauge", "seconds",
               "Unix time the target's last poll ended (success or failure).", (TARGET,), SRC),
    MetricSpec("fabric_last_success_timestamp_seconds", "gauge", "seconds",
               "Unix time of the target's last successful poll.", (TARGET,), SRC),
    MetricSpec("fabric_polls_total", "counter", "", "Polls attempted for the target.", (TARGET,), SRC),
    MetricSpec("fabric_poll_errors_total", "counter", "",
               "Failed or partial polls of the target by reason "
               "(timeout, connect, auth, host_key, command_failed, output_too_large, parse, partial, config, internal).",
               (TARGET + ("reason",),), SRC),
    MetricSpec("fabric_samples", "gauge", "", "Samples the target's current snapshot publishes.", (TARGET,), SRC),
    MetricSpec("fabric_poll_interval_seconds", "gauge", "seconds", "Configured poll interval of the target.",
               (TARGET,), SRC),
    MetricSpec("fabric_poll_backoff_seconds", "gauge", "seconds",
               "Current extra delay before the next poll after consecutive failures (0 when healthy).",
               (TARGET,), SRC),
    MetricSpec("fabric_target_stale", "gauge", "",
               "1 if the target's last success is older than stale_after, so its series are withheld.",
               (TARGET,), SRC),
    MetricSpec("fabric_build_info", "info", "", "Build of the running exporter (value 1).",
               (("version", "python_version"),), SRC),
    MetricSpec("fabric_config_last_reload_successful", "gauge", "",
               "1 if the last configuration (re)load succeeded.", ((),), SRC),
    MetricSpec("fabric_config_last_reload_success_timestamp_seconds", "gauge", "seconds",
               "Unix time of the last successful configuration load.", ((),), SRC),
    MetricSpec("fabric_targets", "gauge", "", "Targets configured, by collector.",
               (("collector",),), SRC),
    MetricSpec("fabric_parse_skipped_lines_total", "counter", "",
               "Lines of tool output a parser skipped because it did not know them, inside a table it "
               "knows (skip-and-count rule), by target and source (the tool or file parsed). Values on "
               "those lines are not published; a rising rate means a tool or driver prints something new.",
               (TARGET + ("source",),), SRC),
    MetricSpec("fabric_snmp_datagrams_dropped_total", "counter", "",
               "UDP datagrams the fast SNMP path dropped, for the whole process, by reason: wrong_source "
               "(not from the agent polled), undecodable (not well-formed SNMP), rejected (wrong community, "
               "SNMPv3 digest, time window, decryption or security level), unmatched (answering no request "
               "in flight: late, duplicated or never asked). A rising rate of anything but unmatched means "
               "a misbehaving agent or someone spoofing one.",
               (("reason",),), SRC),
    # The roce_nic burst sampler's own clock (option burst:), per target: a missed tick made a longer
    # window (no count is lost) but a coarser peak.
    MetricSpec("fabric_burst_sampler_ticks_total", "counter", "",
               "Windows the target's burst sampler has read (roce_nic option burst).", (TARGET,), SRC),
    MetricSpec("fabric_burst_sampler_missed_ticks_total", "counter", "",
               "Burst sampler ticks skipped because the sampler woke more than a window late; the next window "
               "then spans them (its deltas are kept, its value is an average over the longer window).",
               (TARGET,), SRC),
    MetricSpec("fabric_event_loop_lag_seconds", "histogram", "seconds",
               "How much later than asked the daemon's event loop woke a probe that sleeps 0.1 s, again and "
               "again. The loop runs the polls' I/O and hands each scrape its data: a lag of a second holds "
               "scrapes and SNMP answers as long; rate() of the sum is the share of time the loop was behind.",
               ((),), SRC, buckets=(0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)),
    MetricSpec("fabric_burst_sampler_tick_lateness_seconds", "histogram", "seconds",
               "How late each burst sampler tick woke after its absolute deadline.", (TARGET,), SRC,
               buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5)),
]
