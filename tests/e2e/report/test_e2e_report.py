"""End to end: ``fabric-exporter lab --scenario poc --report DIR`` (ibsim IB fabric, simulated RoCE hosts
over SSH, snmpsim switches, the daemon, a real Prometheus with the generated rules) -> the lab's own
report when the sequence is over, and ``fabric-exporter report`` over the POC's window without
``--settings`` (read from the loaded rules) and with the lab's settings file -> the same figures;
summary.json and index.html, the page opened in headless Chromium.

The POC runs with short phases (PHASE seconds each, 12 phases) so the whole test takes a few
minutes. Each fabric gets one incast; the report must find a congestion episode in that fabric
during its incast (and none in the other fabric's incast), with a recovery time within the bounds
the lab's rate window implies, and every section of both fabrics must have real numbers. The page
must render every section and plot in Chromium without console errors, offline.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fabric_exporter.lab.prometheus import PROMETHEUS
from fabric_exporter.lab.traffic import RECOVERY_TIME_CONSTANT_SECONDS
from tests.conftest import ROOT, require_tool
from tests.harness.daemon import free_port

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("ibsim") is None or not os.path.exists(PROMETHEUS),
                       reason="needs ibsim-utils and prometheus (scripts/setup-deps)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab's ibsim fabric needs root"),
]

PHASE = 15.0  # seconds per POC phase unit
INTERVAL = 3  # lab poll and scrape interval (s)
RATE_WINDOW = 15.0  # the rules the lab generates for this test (--rules-rate-window)
SECTIONS = ("throughput", "latency", "congestion", "stability", "completeness")
TIMINGS: dict[str, float] = {}


def _env():
    return {**os.environ, "PYTHONPATH": f"{ROOT / 'exporter'}:{ROOT}"}


def _cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "fabric_exporter", *args], env=_env(), capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def poc(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("poc")
    work = tmp / "lab"
    prom_port = free_port()
    log = open(tmp / "lab.log", "w")
    started = time.monotonic()
    lab = subprocess.Popen(
        [sys.executable, "-m", "fabric_exporter", "lab", "--scenario", "poc", "--poc-phase", str(PHASE),
         "--interval", str(INTERVAL), "--rules-rate-window", f"{RATE_WINDOW:.0f}s", "--workdir", str(work),
         "--racks", "2", "--hosts-per-rack", "2", "--nics", "1",
         "--web.listen-address", f"127.0.0.1:{free_port()}", "--control-address", f"127.0.0.1:{free_port()}",
         "--prometheus-address", f"127.0.0.1:{prom_port}", "--log.level", "error", "--duration", "600",
         "--report", "lab-report"],  # relative to where the lab was started, though it changes directory
        env=_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp)
    try:
        timeline_file = work / "poc-timeline.json"
        deadline = time.monotonic() + 180
        while not timeline_file.exists():
            assert lab.poll() is None, (tmp / "lab.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the lab did not start the POC within 180 s"
            time.sleep(1)
        time.sleep(0.5)
        timeline = json.loads(timeline_file.read_text())
        TIMINGS["lab_start_s"] = round(time.monotonic() - started, 1)
        # wait for the whole sequence plus a rate window and two scrapes, so the last phase is recorded
        end = timeline["end"] + 2 * INTERVAL
        while time.time() < end:
            assert lab.poll() is None, (tmp / "lab.log").read_text()[-3000:]
            time.sleep(min(5.0, max(0.1, end - time.time())))
        url = f"http://127.0.0.1:{prom_port}"
        out = tmp / "report"
        t0 = time.monotonic()
        # no --settings: the report reads the settings from the rules the lab's Prometheus loaded
        r = _cli("report", "--prometheus-url", url, "--from", f"{timeline['start']:.0f}", "--to", f"{end:.0f}",
                 "--out", str(out))
        TIMINGS["report_s"] = round(time.monotonic() - t0, 1)
        assert r.returncode == 0, r.stdout + r.stderr
        lab_report = tmp / "lab-report" / "summary.json"
        deadline = time.monotonic() + 120
        while not lab_report.exists():  # the lab writes it a few scrapes after the sequence's end
            assert lab.poll() is None, (tmp / "lab.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the lab's --report did not write a report within 120 s"
            time.sleep(1)
        time.sleep(0.5)
        yield {"tmp": tmp, "work": work, "url": url, "out": out, "timeline": timeline, "end": end,
               "summary": json.loads((out / "summary.json").read_text()), "stdout": r.stdout}
    finally:
        if lab.poll() is None:
            os.kill(lab.pid, signal.SIGTERM)
            try:
                lab.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(lab.pid, signal.SIGKILL)
                lab.wait(10)
        log.close()
        print("\nPOC e2e timings:", json.dumps(TIMINGS))


def _phase(timeline, scenario):
    return next(p for p in timeline["phases"] if p["scenario"] == scenario)


def _epoch(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_summary_has_both_fabrics_and_every_section_with_numbers(poc):
    s = poc["summary"]
    assert set(s["fabrics"]) == {"ib-lab", "roce-lab"}
    assert s["fabrics"]["ib-lab"]["kind"] == "infiniband" and s["fabrics"]["roce-lab"]["kind"] == "roce"
    for name, f in s["fabrics"].items():
        for section in SECTIONS:
            assert section in f, (name, section)
        assert f["throughput"]["host_transmit_mean_bytes_per_second"] > 1e9, name
        assert sum(f["throughput"]["link_utilisation_histogram_port_samples"].values()) > 0, name
        lat = f["latency"]
        assert 5e-7 < lat["p50_median_seconds"] < lat["p99_median_seconds"] <= lat["p999_median_seconds"] < 1e-4, name
        assert lat["p99_over_p50_ratio"] > 1 and lat["worst_pairs"], name
        # the latency regression phase raised every pair's p99 tenfold for a phase
        assert lat["p99_max_over_median_ratio"] > 3, (name, lat)
        st = f["stability"]
        assert st["link_downs_count"] >= 1, (name, st)  # the link flap phase
        assert st["probes_count"] > 10 and st["probe_loss_ratio"] is not None, (name, st)
        comp = f["completeness"]
        assert comp["targets_count"] >= 2 and comp["fresh_mean_ratio"] > 0.5, (name, comp)
    assert s["fabrics"]["ib-lab"]["stability"]["pause_storm_events_count"] is None  # no PFC on IB
    assert s["fabrics"]["roce-lab"]["stability"]["pause_storm_events_count"] is not None


@pytest.mark.parametrize("fabric, incast, other", [("ib-lab", "incast_ib", "incast_roce"),
                                                    ("roce-lab", "incast_roce", "incast_ib")])
def test_one_congestion_episode_per_incast_with_recovery_in_bounds(poc, fabric, incast, other):
    tau = RECOVERY_TIME_CONSTANT_SECONDS[incast.split("_")[1]]
    c = poc["summary"]["fabrics"][fabric]["congestion"]
    step = poc["summary"]["window"]["step_seconds"]
    assert c["episodes_count"] >= 1, c
    phase = _phase(poc["timeline"], incast)
    load_start, load_end = phase["start"], phase["end"]
    mine = [e for e in c["episodes"] if load_start - step <= _epoch(e["start"]) <= load_end + RATE_WINDOW]
    assert len(mine) == 1, (phase, c["episodes"])
    e = mine[0]
    # The mark is a rate over the rule's window: it can clear no earlier than the load's end and no
    # later than one window (plus scrape/evaluation steps) after it.
    assert load_end - step <= _epoch(e["end"]) <= load_end + RATE_WINDOW + 3 * step, (phase, e)
    assert e["end_observed"] and e["peak_severity_ratio"] > 1
    # Recovered: the lab's tail latency decays with time constant tau after the load (to within the
    # 20% margin after ~3.2 tau), and the fabric p99 is a quantile over one rate window of probes.
    assert e["recovery_seconds"] is not None, e
    assert 0 <= e["recovery_seconds"] <= RATE_WINDOW + 4 * tau + 3 * step, e
    assert c["time_congested_seconds"] >= e["duration_seconds"]
    # the other fabric's incast did not congest this one
    other_phase = _phase(poc["timeline"], other)
    assert not [x for x in c["episodes"]
                if other_phase["start"] <= _epoch(x["start"]) <= other_phase["end"]], c["episodes"]


def test_page_is_self_contained_and_has_every_section(poc):
    page = (poc["out"] / "index.html").read_text()
    assert not re.search(r"<(script|link|img|iframe)\b", page), "the page must not load anything"
    assert not re.search(r'(src|href)="(https?:)?//', page)
    for section in SECTIONS:
        for fabric in ("ib-lab", "roce-lab"):
            block = re.search(rf'<div class="fabric" data-section="{section}"><h3>{fabric}</h3>(.*?)</div>', page, re.S)
            assert block and "<svg" in block.group(1), (section, fabric)
            svg = block.group(1)[:block.group(1).index("</svg>")]
            assert not re.search(r">no [^<]* in this window<", svg), (section, fabric, "a plot without data")
    assert 'id="summary"' in page


def chromium_env(tmp: Path) -> dict[str, str]:
    """chromium writes ~/.config/chromium/Crash Reports and ~/.cache/dconf even with --user-data-dir:
    a home of its own in the test's directory."""
    home = tmp / "chromium-home"
    return {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache")}


def test_page_renders_in_headless_chromium(poc):
    chromium = require_tool("chromium")
    shot = poc["tmp"] / "report.png"
    # no network at all: a proxy nobody listens on, so any outside reference would fail and be logged
    r = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1400,4200",
         f"--proxy-server=127.0.0.1:{free_port()}", "--enable-logging=stderr", "--v=0",
         f"--user-data-dir={poc['tmp'] / 'chromium-profile'}",
         f"--screenshot={shot}", (poc["out"] / "index.html").as_uri()],
        env=chromium_env(poc["tmp"]), capture_output=True, text=True, timeout=120)
    assert shot.exists(), r.stderr[-2000:]
    console = [line for line in r.stderr.splitlines()
               if "CONSOLE" in line or "Uncaught" in line or "Failed to load resource" in line]
    assert not console, console
    dom = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--proxy-server=127.0.0.1:{free_port()}",
         f"--user-data-dir={poc['tmp'] / 'chromium-profile'}", "--dump-dom", (poc["out"] / "index.html").as_uri()],
        env=chromium_env(poc["tmp"]), capture_output=True, text=True, timeout=120).stdout
    # every section, for both fabrics, rendered with its plot (matplotlib draws paths)
    for section in SECTIONS:
        assert dom.count(f'data-section="{section}"') == 2, section
    assert dom.count("<svg") >= 2 * len(SECTIONS)
    from matplotlib import image

    pixels = image.imread(str(shot))
    assert pixels.shape[0] >= 4000 and pixels.shape[1] >= 1300
    rgb = pixels[..., :3]
    non_white = (rgb.min(axis=2) < 0.9).mean()
    assert non_white > 0.03, f"screenshot is (nearly) blank: {non_white:.3%} non-white pixels"
    assert rgb.std() > 0.05
    shutil.copy(shot, poc["out"] / "screenshot.png")
    keep = os.environ.get("FABRIC_REPORT_ARTIFACTS")  # where to keep the page, summary and screenshot
    if keep:
        shutil.copytree(poc["out"], Path(keep) / "report", dirs_exist_ok=True)
        shutil.copy(poc["work"] / "poc-timeline.json", Path(keep) / "poc-timeline.json")


def test_report_without_settings_equals_the_report_with_the_labs_settings_file(poc, tmp_path):
    """The settings come from the rules Prometheus evaluates: the lab's settings file agrees and changes nothing."""
    r = _cli("report", "--prometheus-url", poc["url"], "--from", f"{poc['timeline']['start']:.0f}",
             "--to", f"{poc['end']:.0f}", "--settings", str(poc["work"] / "lab-mixin-settings.yaml"),
             "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    with_file = json.loads((tmp_path / "summary.json").read_text())
    assert with_file["fabrics"] == poc["summary"]["fabrics"]
    assert with_file["settings"] == poc["summary"]["settings"]
    assert poc["summary"]["settings"]["rate_window"] == f"{RATE_WINDOW:.0f}s"  # the lab's, not the default 5m
    assert poc["summary"]["settings"]["congestion.bridge_gap"] == "30s"


def test_a_settings_file_that_disagrees_with_the_rules_is_refused(poc, tmp_path):
    defaults = tmp_path / "defaults.yaml"
    defaults.write_text("rate_window: 5m\n")
    r = _cli("report", "--prometheus-url", poc["url"], "--since", "5m", "--settings", str(defaults),
             "--out", str(tmp_path / "out"))
    assert r.returncode == 2, r.stdout + r.stderr
    for difference in (f"rate_window: '{RATE_WINDOW:.0f}s' in the rules, '5m' in the file",
                       "congestion.pfc_pause_fraction: 0.05 in the rules, 0.1 in the file",
                       "congestion.bridge_gap: '30s' in the rules, '1m' in the file",
                       "congestion.ib_xmit_wait_ratio: 5e-06 in the rules, 0.05 in the file"):
        assert difference in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_the_lab_says_when_the_poc_is_over_and_writes_the_report(poc):
    log = (poc["tmp"] / "lab.log").read_text()
    assert "POC sequence over: baseline (30 s), incast on InfiniBand (15 s)" in log, log[-3000:]
    assert f"POC report written to {poc['tmp'] / 'lab-report'}" in log, log[-3000:]
    lab = json.loads((poc["tmp"] / "lab-report" / "summary.json").read_text())
    assert (poc["tmp"] / "lab-report" / "index.html").exists()
    start, end = poc["timeline"]["start"], poc["timeline"]["end"]
    assert abs(_epoch(lab["window"]["from"]) - start) <= 1 and abs(_epoch(lab["window"]["to"]) - end) <= 1
    assert lab["settings"] == poc["summary"]["settings"]
    for fabric in ("ib-lab", "roce-lab"):
        assert lab["fabrics"][fabric]["congestion"]["episodes_count"] >= 1, lab["fabrics"][fabric]["congestion"]


def test_ports_and_counts_read_as_an_operator_reads_them(poc):
    for name, f in poc["summary"]["fabrics"].items():
        st, tp = f["stability"], f["throughput"]
        for key in ("probes_count", "probe_failures_count", "errors_count", "link_downs_count"):
            assert isinstance(st[key], int), (name, key, st[key])
        # port names are "node port N" (IB) or "host device/port" (NIC), never a label dump
        assert st["link_downs_count_by_port"] and not any("=" in port for port in st["link_downs_count_by_port"])
        # 2 racks x 2 hosts x 1 adapter port on each fabric
        assert tp["host_adapter_ports_count"] == 4, (name, tp)
        assert tp["host_transmit_per_adapter_port_mean_bytes_per_second"] == pytest.approx(
            tp["host_transmit_mean_bytes_per_second"] / 4, rel=0.05), (name, tp)
    ib_ports = poc["summary"]["fabrics"]["ib-lab"]["stability"]["link_downs_count_by_port"]
    assert any(re.fullmatch(r"leaf-\d+ port \d+", p) for p in ib_ports), ib_ports
    nic_ports = poc["summary"]["fabrics"]["roce-lab"]["stability"]["link_downs_count_by_port"]
    assert any(re.fullmatch(r"gpu-\d{3} mlx5_\d/\d", p) for p in nic_ports), nic_ports


def test_report_errors_are_clear(poc, tmp_path):
    settings = str(poc["work"] / "lab-mixin-settings.yaml")
    r = _cli("report", "--prometheus-url", f"http://127.0.0.1:{free_port()}", "--since", "5m", "--out", str(tmp_path))
    assert r.returncode == 2 and "cannot reach Prometheus at http://127.0.0.1:" in r.stderr, r.stderr
    r = _cli("report", "--prometheus-url", poc["url"], "--since", "10m", "--fabric", "nope", "--settings", settings,
             "--out", str(tmp_path))
    assert r.returncode == 2 and "unknown fabric(s) 'nope'" in r.stderr and "ib-lab, roce-lab" in r.stderr, r.stderr
    r = _cli("report", "--prometheus-url", poc["url"], "--from", "2020-01-01T00:00:00Z", "--to", "2020-01-01T06:00:00Z",
             "--settings", settings, "--out", str(tmp_path))
    assert r.returncode == 2 and "no fabric-exporter data" in r.stderr, r.stderr
    assert not (tmp_path / "index.html").exists()  # never an empty page


def test_one_fabric_only(poc, tmp_path):
    r = _cli("report", "--prometheus-url", poc["url"], "--from", f"{poc['timeline']['start']:.0f}",
             "--to", f"{poc['end']:.0f}", "--fabric", "roce-lab",
             "--settings", str(poc["work"] / "lab-mixin-settings.yaml"), "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert set(json.loads((tmp_path / "summary.json").read_text())["fabrics"]) == {"roce-lab"}
