"""``snmp_engine``: an autouse fixture that runs every test of the module importing it on both SNMP
request paths (the fast path, and pysnmp). The default engine is switched, so groups without an
``snmp_engine`` option (all of them) take it. Import it into a test module to apply it there only."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, params=["fast", "pysnmp"])
def snmp_engine(request, monkeypatch):
    from fabric_exporter.collectors.snmp_switch import options

    monkeypatch.setattr(options.SnmpSwitchOptions, "snmp_engine", request.param)
    monkeypatch.setattr(options, "DEFAULT_ENGINE", request.param)
    return request.param
