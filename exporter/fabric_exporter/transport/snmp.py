"""SNMP transport (pysnmp 7, asyncio): GET and GETBULK walks with numeric OIDs and no MIB lookups.

One SnmpEngine per event loop, kept in ``Transports._snmp_state`` and shared by every session (the
engine owns the UDP dispatcher; one per session would cost a socket and a task each). Sessions are
cheap: credentials, address, timeout/retries and max-repetitions; the UDP target is resolved lazily.

Walks are our own GETBULK loop rather than ``bulk_walk_cmd``: it stops at the end of the subtree
(``lexicographicMode=False`` semantics), refuses non-increasing OIDs, bounds the number of varbinds,
and raises a PollError subclass on every failure so a walk that stops half-way is never returned as
if it were the whole table.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from pysnmp.hlapi.v3arch.asyncio import (
    CommunityData,
    ContextData,
    SnmpEngine,
    UdpTransportTarget,
    UsmUserData,
    bulk_cmd,
    get_cmd,
    usmAesCfb128Protocol,
    usmAesCfb256Protocol,
    usmDESPrivProtocol,
    usmHMAC192SHA256AuthProtocol,
    usmHMAC384SHA512AuthProtocol,
    usmHMACMD5AuthProtocol,
    usmHMACSHAAuthProtocol,
    usmNoAuthProtocol,
    usmNoPrivProtocol,
)
from pysnmp.proto import errind, rfc1902, rfc1905
from pysnmp.smi.rfc1902 import ObjectIdentity, ObjectType

from ..config import Host, SNMPCredential, TargetGroup
from ..errors import AuthError, ConnectError, PollError, PollTimeout
# Value kinds a varbind is reduced to (pyasn1 objects are expensive to keep around): one record type
# for both paths, defined beside the fast path's decoder.
from .snmp_ber import COUNTER32, COUNTER64, GAUGE, INTEGER, OTHER, STRING, TIMETICKS, Varbind

log = logging.getLogger("fabric_exporter.snmp")

DEFAULT_PORT = 161
DEFAULT_TIMEOUT = 2.0
DEFAULT_RETRIES = 2
DEFAULT_MAX_REPETITIONS = 25
#: a walk longer than this is a looping or misbehaving agent, not a table
MAX_WALK_VARBINDS = 2_000_000

_AUTH = {"md5": usmHMACMD5AuthProtocol, "sha": usmHMACSHAAuthProtocol,
         "sha256": usmHMAC192SHA256AuthProtocol, "sha512": usmHMAC384SHA512AuthProtocol}
_PRIV = {"des": usmDESPrivProtocol, "aes": usmAesCfb128Protocol, "aes128": usmAesCfb128Protocol,
         "aes256": usmAesCfb256Protocol}

# SNMPv3 USM failures: the agent told us (in a report PDU) why it refused the request.
_AUTH_FAILURES = (errind.WrongDigest, errind.UnknownUserName, errind.DecryptionError,
                  errind.UnsupportedSecurityLevel, errind.UnknownSecurityName, errind.AuthenticationFailure,
                  errind.AuthenticationError, errind.NotInTimeWindow, errind.UnknownCommunityName,
                  errind.NoSuchContext, errind.UnsupportedAuthProtocol, errind.UnsupportedPrivProtocol)



def _convert(name: Any, value: Any) -> Varbind:
    oid = tuple(name)
    # Order matters: Counter32/Gauge32/TimeTicks are Integer subclasses in pyasn1.
    if isinstance(value, rfc1902.Counter64):
        return Varbind(oid, COUNTER64, int(value))
    if isinstance(value, rfc1902.Counter32):
        return Varbind(oid, COUNTER32, int(value))
    if isinstance(value, rfc1902.TimeTicks):
        return Varbind(oid, TIMETICKS, int(value))
    if isinstance(value, (rfc1902.Gauge32, rfc1902.Unsigned32)):
        return Varbind(oid, GAUGE, int(value))
    if isinstance(value, rfc1902.Integer32) or type(value).__name__ == "Integer":
        return Varbind(oid, INTEGER, int(value))
    if isinstance(value, rfc1902.OctetString):
        return Varbind(oid, STRING, value.asOctets())
    return Varbind(oid, OTHER, value.prettyPrint())


def _is_exception(value: Any) -> bool:
    return isinstance(value, (rfc1905.NoSuchObject, rfc1905.NoSuchInstance, rfc1905.EndOfMibView))


def format_oid(oid: tuple[int, ...]) -> str:
    return ".".join(map(str, oid))


def parse_oid(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.strip(".").split("."))


@dataclass
class _SnmpState:
    """The loop's engines: the shared one (key "") and one per SNMPv3 credential whose user name
    another credential already uses. pysnmp's USM table is keyed by user name (and the agent's engine
    ID, unknown until discovery), so two credentials with one user name and different keys in one
    engine would overwrite each other's keys while requests are in flight."""

    loop: asyncio.AbstractEventLoop
    engines: dict[str, SnmpEngine] = field(default_factory=dict)
    v3_users: dict[str, str] = field(default_factory=dict)  # user name -> credential that owns it


def _engine_for(transports: Any, cred: SNMPCredential | None = None) -> SnmpEngine:
    loop = asyncio.get_running_loop()
    state: _SnmpState | None = transports._snmp_state
    if state is None or state.loop is not loop:
        if state is not None:  # a previous loop's engines (tests run several loops)
            for engine in state.engines.values():
                _close_engine(engine)
        state = _SnmpState(loop)
        transports._snmp_state = state
    key = ""
    if cred is not None and cred.version == "3" and cred.username:
        owner = state.v3_users.setdefault(cred.username, cred.name)
        if owner != cred.name:
            key = f"v3:{cred.name}"
    engine = state.engines.get(key)
    if engine is None:
        engine = state.engines[key] = SnmpEngine()
    return engine


def _close_engine(engine: SnmpEngine) -> None:
    try:
        engine.close_dispatcher()
    except Exception as e:  # closing at shutdown must not mask the reason we are shutting down
        log.debug("closing SNMP dispatcher: %s", e)


async def close_state(state: _SnmpState) -> None:
    """Close the engines' dispatchers (their UDP sockets and timer tasks) at shutdown."""
    for engine in state.engines.values():
        _close_engine(engine)
    state.engines.clear()
    await asyncio.sleep(0)


def _auth_data(cred: SNMPCredential) -> CommunityData | UsmUserData:
    try:
        if cred.version == "2c":
            if cred.community is None:
                raise AuthError(f"credential {cred.name}: no community")
            return CommunityData(cred.community.read(), mpModel=1)
        auth_proto = _AUTH[cred.auth_protocol] if cred.auth_protocol else usmNoAuthProtocol
        priv_proto = _PRIV[cred.priv_protocol] if cred.priv_protocol else usmNoPrivProtocol
        return UsmUserData(
            cred.username or "",
            authKey=cred.auth_password.read() if cred.auth_password else None,
            privKey=cred.priv_password.read() if cred.priv_password else None,
            authProtocol=auth_proto,
            privProtocol=priv_proto,
        )
    except (OSError, ValueError) as e:  # unreadable secret file, unset env var
        raise AuthError(f"credential {cred.name}: cannot read secret: {e}") from None


class SnmpSession:
    """Requests to one agent. Every method raises PollTimeout, AuthError, ConnectError or PollError."""

    def __init__(self, engine: SnmpEngine, auth: CommunityData | UsmUserData, address: str, port: int,
                 *, timeout: float, retries: int, max_repetitions: int, context: str = ""):
        self.engine = engine
        self.auth = auth
        self.address = address
        self.port = port
        self.timeout = timeout
        self.retries = retries
        self.max_repetitions = max_repetitions
        self.context = ContextData(contextName=context) if context else ContextData()
        self.description = f"snmp://{address}:{port}"
        self._target: UdpTransportTarget | None = None
        #: PDUs sent and varbinds received by this session (for benchmarks and debugging)
        self.requests = 0
        self.varbinds = 0

    async def _get_target(self) -> UdpTransportTarget:
        if self._target is None:
            try:
                self._target = await UdpTransportTarget.create((self.address, self.port), timeout=self.timeout,
                                                               retries=self.retries)
            except Exception as e:  # pysnmp raises PySnmpError for unresolvable names
                raise ConnectError(f"{self.description}: cannot resolve address: {e}") from None
        return self._target

    def _raise_for(self, what: str, error_indication: Any, error_status: Any, error_index: Any) -> None:
        if error_indication:
            if isinstance(error_indication, errind.RequestTimedOut):
                tries = self.retries + 1
                hint = " (SNMPv2c agents also stay silent on a wrong community)" if isinstance(
                    self.auth, CommunityData) else ""
                raise PollTimeout(f"{self.description}: {what}: no response after {tries} "
                                  f"request{'s' if tries > 1 else ''} of {self.timeout:g}s{hint}")
            if isinstance(error_indication, _AUTH_FAILURES):
                raise AuthError(f"{self.description}: {what}: SNMPv3 refused: {error_indication} "
                                f"({type(error_indication).__name__})")
            raise ConnectError(f"{self.description}: {what}: {error_indication}")
        if error_status:
            raise PollError(f"{self.description}: {what}: agent error {error_status.prettyPrint()} "
                            f"at varbind {int(error_index)}", reason="partial")

    async def get(self, oids: list[tuple[int, ...]]) -> dict[tuple[int, ...], Varbind | None]:
        """GET scalars; a missing object maps to None."""
        target = await self._get_target()
        self.requests += 1
        ei, es, ex, vbs = await get_cmd(self.engine, self.auth, target, self.context,
                                        *[ObjectType(ObjectIdentity(format_oid(o))) for o in oids],
                                        lookupMib=False)
        self._raise_for("get", ei, es, ex)
        out: dict[tuple[int, ...], Varbind | None] = {}
        for name, value in vbs:
            self.varbinds += 1
            oid = tuple(name)
            out[oid] = None if _is_exception(value) else _convert(name, value)
        return out

    async def walk(self, root: tuple[int, ...], *, max_repetitions: int | None = None,
                   expected_rows: int | None = None) -> list[Varbind]:
        """Every varbind under ``root``, in OID order, fetched with GETBULK. Complete or an exception.

        ``expected_rows`` (the row count of the previous walk) spreads the rows evenly over the
        fewest pages: 64 rows at max-repetitions 25 are fetched as 3 x 22 rather than 3 x 25, since
        every varbind past the subtree costs as much to decode as a useful one.
        """
        target = await self._get_target()
        reps = max_repetitions or self.max_repetitions
        if expected_rows:
            wanted = expected_rows + 1  # one past the end shows where the subtree ends
            pages = -(-wanted // reps)
            reps = -(-wanted // pages)
        n = len(root)
        out: list[Varbind] = []
        current = root
        what = f"walk {format_oid(root)}"
        while True:
            self.requests += 1
            ei, es, ex, vbs = await bulk_cmd(self.engine, self.auth, target, self.context, 0, reps,
                                             ObjectType(ObjectIdentity(format_oid(current))), lookupMib=False)
            if ei or es:
                got = f" after {len(out)} varbinds" if out else ""
                try:
                    self._raise_for(what + got, ei, es, ex)
                except PollError as e:
                    if out:  # the table was cut off: say so, never hand back the first part as all of it
                        e.args = (f"{e.args[0]} (table incomplete)",)
                    raise
            if not vbs:
                raise PollError(f"{self.description}: {what}: empty GETBULK response", reason="partial")
            for name, value in vbs:
                oid = tuple(name)
                if oid[:n] != root or isinstance(value, rfc1905.EndOfMibView):
                    return out
                if _is_exception(value):
                    continue
                if oid <= current:
                    raise PollError(f"{self.description}: {what}: agent returned non-increasing OID "
                                    f"{format_oid(oid)} after {format_oid(current)} (table incomplete)",
                                    reason="partial")
                current = oid
                out.append(_convert(name, value))
                self.varbinds += 1
            if len(out) > MAX_WALK_VARBINDS:
                raise PollError(f"{self.description}: {what}: more than {MAX_WALK_VARBINDS} varbinds; "
                                f"stopping (agent loop?)", reason="partial")


def open_session(transports: Any, group: TargetGroup, host: Host) -> SnmpSession:
    """A session for ``host`` of ``group``: credentials from the group, timing from its options."""
    cred = group.credentials
    if not isinstance(cred, SNMPCredential):
        raise AuthError(f"group {group.name}: SNMP needs an snmp credential")
    opts = group.options
    timeout = float(getattr(opts, "snmp_timeout", None) or DEFAULT_TIMEOUT)
    retries = int(getattr(opts, "snmp_retries", DEFAULT_RETRIES))
    reps = int(getattr(opts, "max_repetitions", None) or DEFAULT_MAX_REPETITIONS)
    return SnmpSession(_engine_for(transports, cred), _auth_data(cred), host.address, host.port or DEFAULT_PORT,
                       timeout=timeout, retries=retries, max_repetitions=reps, context=cred.context)


__all__ = ["SnmpSession", "Varbind", "open_session", "close_state", "format_oid", "parse_oid",
           "COUNTER32", "COUNTER64", "GAUGE", "INTEGER", "TIMETICKS", "STRING", "OTHER"]
