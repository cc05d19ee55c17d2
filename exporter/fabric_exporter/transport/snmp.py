"""SNMP transport (pysnmp 7, asyncio): GET and GETBULK walks with numeric OIDs and no MIB lookups.

One SnmpEngine per event loop, kept in ``Transports._snmp_state`` and shared by every session (the
engine owns the UDP dispatcher; one per session would cost a socket and a task each). Sessions are
cheap: credentials, address, timeout/retries and max-repetitions; the UDP target is resolved lazily.

Requests go to pysnmp's command generators with numeric varbinds, not through ``get_cmd``/``bulk_cmd``:
those resolve every varbind through a MIB view, and the first resolution in an engine builds pysmi's
MIB compiler (its LALR parser), 1-3 s of CPU in the event loop per engine -- every other target's
polls stalled, and a pysnmp walk timed out on its own first request on a loaded host.

Walks are our own GETBULK loop rather than ``bulk_walk_cmd``: it stops at the end of the subtree
(``lexicographicMode=False`` semantics), refuses non-increasing OIDs, bounds the number of varbinds,
and raises a PollError subclass on every failure so a walk that stops half-way is never returned as
if it were the whole table.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from dataclasses import dataclass, field
from typing import Any

from pysnmp.entity import config as pysnmp_config
from pysnmp.entity.rfc3413 import cmdgen
from pysnmp.hlapi.v3arch.asyncio import (
    CommunityData,
    ContextData,
    SnmpEngine,
    UdpTransportTarget,
    UsmUserData,
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
from pysnmp.hlapi.v3arch.asyncio.lcd import CommandGeneratorLcdConfigurator
from pysnmp.proto import errind, rfc1902, rfc1905
from pysnmp.proto.mpmod.rfc3412 import SnmpV3MessageProcessingModel
from pysnmp.proto.secmod.rfc3414.service import SnmpUSMSecurityModel

from ..config import SNMPV3_MIN_KEY_LENGTH, Host, SNMPCredential, TargetGroup
from ..errors import AuthError, ConnectError, PollError
from .base import ReadBudget
# Value kinds a varbind is reduced to (pyasn1 objects are expensive to keep around): one record type
# for both paths, defined beside the fast path's decoder.
from .snmp_ber import (
    COUNTER32,
    COUNTER64,
    END_OF_MIB_VIEW,
    GAUGE,
    INTEGER,
    NO_SUCH_INSTANCE,
    NO_SUCH_OBJECT,
    OTHER,
    STRING,
    TIMETICKS,
    Varbind,
)
from .snmp_session import DEFAULT_PORT, MAX_WALK_VARBINDS, AgentPages, SnmpSessionBase, format_oid, parse_oid

log = logging.getLogger("fabric_exporter.snmp")

DEFAULT_TIMEOUT = 2.0
DEFAULT_RETRIES = 2
#: GETBULK page size unless the target sets ``max_repetitions``: a 64-port switch's column (65
#: rows with the one past its end) in one round trip rather than three at 25; each round trip costs
#: the daemon an encode, a decode, USM and event-loop wake-ups (bench/RESULTS.md, issue 27). net-snmp
#: agents answer at most 100 varbinds a GETBULK (maxGetbulkResponses) and any agent truncates a page
#: to its message size (RFC 3416 4.2.3); one answering tooBig instead gets halved pages (snmp_session).
DEFAULT_MAX_REPETITIONS = 100

_AUTH = {"md5": usmHMACMD5AuthProtocol, "sha": usmHMACSHAAuthProtocol,
         "sha256": usmHMAC192SHA256AuthProtocol, "sha512": usmHMAC384SHA512AuthProtocol}
_PRIV = {"des": usmDESPrivProtocol, "aes": usmAesCfb128Protocol, "aes128": usmAesCfb128Protocol,
         "aes256": usmAesCfb256Protocol}

#: adds our targets, credentials and the UDP transport to an engine (its bookkeeping lives in the engine)
_LCD = CommandGeneratorLcdConfigurator()

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


_EXCEPTION_KINDS = {rfc1905.NoSuchObject: NO_SUCH_OBJECT, rfc1905.NoSuchInstance: NO_SUCH_INSTANCE,
                    rfc1905.EndOfMibView: END_OF_MIB_VIEW}


def _convert_any(name: Any, value: Any) -> Varbind:
    """A pysnmp varbind, SNMPv2 exceptions included (as the fast path's decoder reports them)."""
    kind = _EXCEPTION_KINDS.get(type(value))
    return Varbind(tuple(name), kind, None) if kind else _convert(name, value)


@dataclass
class _SnmpState:
    """The loop's engines: the shared one (key "") and one per SNMPv3 credential whose user name
    another credential already uses. pysnmp's USM table is keyed by user name (and the agent's engine
    ID, unknown until discovery), so two credentials with one user name and different keys in one
    engine would overwrite each other's keys while requests are in flight."""

    loop: asyncio.AbstractEventLoop
    engines: dict[str, SnmpEngine] = field(default_factory=dict)
    v3_users: dict[str, str] = field(default_factory=dict)  # user name -> credential that owns it
    #: the fast path's bound on requests in flight per agent (address, port), shared by its sessions
    agent_limits: dict[tuple[str, int], asyncio.Semaphore] = field(default_factory=dict)
    #: GETBULK page sizes learned per agent (address, port), kept across polls for every session of it
    agent_pages: dict[tuple[str, int], AgentPages] = field(default_factory=dict)
    fast_sessions: weakref.WeakSet = field(default_factory=weakref.WeakSet)


def _state_for(transports: Any) -> _SnmpState:
    loop = asyncio.get_running_loop()
    state: _SnmpState | None = transports._snmp_state
    if state is None or state.loop is not loop:
        if state is not None:  # a previous loop's engines (tests run several loops)
            for engine in state.engines.values():
                _close_engine(engine)
        state = _SnmpState(loop)
        transports._snmp_state = state
    return state


def _engine_for(transports: Any, cred: SNMPCredential | None = None) -> SnmpEngine:
    state = _state_for(transports)
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
    # Stop reading first and let answers already read reach their engine: a dispatcher closed with
    # an answer's callback queued (a request just cancelled by its deadline) makes pysnmp raise
    # "Unregistered transport" in the event loop.
    for engine in state.engines.values():
        udp = pysnmp_config.get_transport(engine, UdpTransportTarget.TRANSPORT_DOMAIN)
        if udp is not None and udp.transport is not None:
            udp.transport.close()
    await asyncio.sleep(0)
    for engine in state.engines.values():
        _close_engine(engine)
    state.engines.clear()
    for session in list(state.fast_sessions):
        session.close()
    await asyncio.sleep(0)


def _community(cred: SNMPCredential) -> bytes:
    try:
        if cred.community is None:
            raise AuthError(f"credential {cred.name}: no community")
        return cred.community.read().encode()
    except (OSError, ValueError) as e:  # unreadable secret file, unset env var
        raise _read_secret_error(cred, e) from None


def _read_secret_error(cred: SNMPCredential, e: Exception) -> AuthError:
    # OSError names the file, our ValueError the variable; a decode error would quote the secret's bytes
    detail = "not valid UTF-8" if isinstance(e, UnicodeDecodeError) else str(e)
    return AuthError(f"credential {cred.name}: cannot read secret: {detail}")


def _v3_passwords(cred: SNMPCredential) -> tuple[str | None, str | None]:
    """(auth_password, priv_password) of a v3 credential, each refused if shorter than RFC 3414 allows."""
    try:
        out = []
        for name, secret in (("auth", cred.auth_password), ("priv", cred.priv_password)):
            value = secret.read() if secret else None
            # pysnmp would refuse it deep in its MIB code, with the key in the exception text
            if value is not None and len(value.encode()) < SNMPV3_MIN_KEY_LENGTH:
                raise AuthError(f"credential {cred.name}: the {name}_password "
                                f"is shorter than {SNMPV3_MIN_KEY_LENGTH} characters (RFC 3414)")
            out.append(value)
        return out[0], out[1]
    except (OSError, ValueError) as e:  # unreadable secret file, unset env var
        raise _read_secret_error(cred, e) from None


def _auth_data(cred: SNMPCredential) -> CommunityData | UsmUserData:
    try:
        if cred.version == "2c":
            if cred.community is None:
                raise AuthError(f"credential {cred.name}: no community")
            return CommunityData(cred.community.read(), mpModel=1)
    except (OSError, ValueError) as e:  # unreadable secret file, unset env var
        raise _read_secret_error(cred, e) from None
    auth_proto = _AUTH[cred.auth_protocol] if cred.auth_protocol else usmNoAuthProtocol
    priv_proto = _PRIV[cred.priv_protocol] if cred.priv_protocol else usmNoPrivProtocol
    auth_key, priv_key = _v3_passwords(cred)
    return UsmUserData(cred.username or "", authProtocol=auth_proto, privProtocol=priv_proto, authKey=auth_key,
                       privKey=priv_key)


def secret_values(cred: SNMPCredential) -> list[str]:
    """The credential's secrets as text, to scrub from any message that might quote them."""
    out = []
    for secret in (cred.community, cred.auth_password, cred.priv_password):
        if secret is not None:
            try:
                out.append(secret.read())
            except (OSError, ValueError):
                pass
    return [v for v in out if v]


class SnmpSession(SnmpSessionBase):
    """Requests to one agent through pysnmp (where ``snmp_engine: pysnmp`` asks for it, and SNMPv3
    credentials whose protocols the fast path does not serve).

    SNMPv3: pysnmp caches the agent's engine ID (300 s) and its boots/time, and by RFC 3414 it will
    not move that clock backwards. An agent restarted with a new engine ID (or with its clock reset
    while keeping the ID) then ignores or refuses every request until the cache expires -- minutes
    without data. So a report of ``unknownEngineID``/``notInTimeWindow``, or a timeout from an agent
    we had discovered, makes the session forget what it knew about the agent and try once more,
    which rediscovers it. A wrong password then shows as what it is (``auth``), not as a timeout.
    """

    def __init__(self, engine: SnmpEngine, auth: CommunityData | UsmUserData, address: str, port: int,
                 *, timeout: float, retries: int, max_repetitions: int, context: str = "",
                 secrets: list[str] | tuple[str, ...] = ()):
        super().__init__(address, port, timeout=timeout, retries=retries, max_repetitions=max_repetitions)
        self.engine = engine
        self.auth = auth
        self.context = ContextData(contextName=context) if context else ContextData()
        self._target: UdpTransportTarget | None = None
        self._v3 = isinstance(auth, UsmUserData)
        self._secrets = tuple(sorted((v for v in secrets if v), key=len, reverse=True))
        #: times this session forgot the agent's engine and rediscovered it
        self.rediscoveries = 0
        if isinstance(auth, CommunityData):
            self.timeout_hint = " (SNMPv2c agents also stay silent on a wrong community)"

    async def _get_target(self) -> UdpTransportTarget:
        if self._target is None:
            try:
                self._target = await UdpTransportTarget.create((self.address, self.port), timeout=self.timeout,
                                                               retries=self.retries)
            except Exception as e:  # pysnmp raises PySnmpError for unresolvable names
                raise ConnectError(self._redact(f"{self.description}: cannot resolve address: {e}")) from None
        return self._target

    def _redact(self, text: str) -> str:
        for value in self._secrets:
            text = text.replace(value, "<secret>")
        return text

    def _raise_for(self, what: str, error_indication: Any, error_status: Any, error_index: Any) -> None:
        if error_indication:
            if isinstance(error_indication, errind.RequestTimedOut):
                raise self.timeout_error(what)
            if isinstance(error_indication, _AUTH_FAILURES):
                raise AuthError(f"{self.description}: {what}: SNMPv3 refused: {error_indication} "
                                f"({type(error_indication).__name__})")
            raise ConnectError(f"{self.description}: {what}: {error_indication}")
        if error_status:
            raise self.status_error(what, int(error_status), int(error_index))

    def _forget_agent(self) -> bool:
        """Drop pysnmp's cached engine ID and clock of this agent; True if there was any."""
        if self._target is None:
            return False
        peer = tuple(self._target.transport_address)[:2]
        mp = self.engine.message_processing_subsystems.get(SnmpV3MessageProcessingModel.MESSAGE_PROCESSING_MODEL_ID)
        usm = self.engine.security_models.get(SnmpUSMSecurityModel.SECURITY_MODEL_ID)
        cache = getattr(mp, "_SnmpV3MessageProcessingModel__engineIdCache", None)
        expiry = getattr(mp, "_SnmpV3MessageProcessingModel__engineIdCacheExpQueue", None)
        timeline = getattr(usm, "_SnmpUSMSecurityModel__timeline", None)
        if cache is None or expiry is None or timeline is None:  # a pysnmp whose internals moved
            return False
        forgotten = [k for k in cache if tuple(k[1])[:2] == peer]
        for key in forgotten:
            timeline.pop(cache.pop(key)["securityEngineId"], None)
            for keys in expiry.values():  # pysnmp's expiry would otherwise delete the entry again
                while key in keys:
                    keys.remove(key)
        return bool(forgotten)

    def _engine_is_stale(self, error_indication: Any) -> bool:
        if not self._v3 or not error_indication:
            return False
        if isinstance(error_indication, (errind.UnknownEngineID, errind.NotInTimeWindow)):
            self._forget_agent()
            return True
        return isinstance(error_indication, errind.RequestTimedOut) and self._forget_agent()

    async def _call(self, what: str, request: Any) -> list[Varbind]:
        """Run a pysnmp request (a coroutine factory); rediscover once if the agent's engine looks stale."""
        for attempt in (1, 2):
            try:
                ei, es, ex, vbs = await request()
            except PollError:
                raise
            except Exception as e:  # pysnmp failing inside: its text (and traceback) may quote a key
                raise PollError(f"{self.description}: {what}: pysnmp failed: {type(e).__name__}") from None
            if attempt == 1 and self._engine_is_stale(ei):
                self.rediscoveries += 1
                log.info("SNMPv3 agent %s: %s; rediscovering its engine", self.description,
                         type(ei).__name__)
                continue
            break
        try:
            self._raise_for(what, ei, es, ex)
        except PollError as e:
            e.args = (self._redact(str(e.args[0])),)
            raise
        return [_convert_any(name, value) for name, value in vbs]

    def _send(self, target: UdpTransportTarget, generator: Any, *args: Any) -> asyncio.Future:
        """Send a request with ``generator``'s ``send_varbinds`` (``args``: what follows the context
        name); the future gets (errorIndication, errorStatus, errorIndex, [(name, value)])."""
        addr_name, _ = _LCD.configure(self.engine, self.auth, target, self.context.contextName)
        future = asyncio.get_running_loop().create_future()

        def done(_engine, _handle, error_indication, error_status, error_index, var_binds, _ctx):
            if not future.done():  # cancelled by the poll's deadline
                future.set_result((error_indication, error_status, error_index, var_binds))

        generator.send_varbinds(self.engine, addr_name, self.context.contextEngineId, self.context.contextName,
                                *args, done, None)
        return future

    async def _get_request(self, what: str, oids: list[tuple[int, ...]]) -> list[Varbind]:
        target = await self._get_target()
        var_binds = [(rfc1902.ObjectName(o), rfc1902.Null()) for o in oids]
        return await self._call(what, lambda: self._send(target, cmdgen.GetCommandGenerator(), var_binds))

    async def _bulk_request(self, what: str, oid: tuple[int, ...], max_repetitions: int) -> list[Varbind]:
        target = await self._get_target()
        var_binds = [(rfc1902.ObjectName(oid), rfc1902.Null())]
        return await self._call(what, lambda: self._send(target, cmdgen.BulkCommandGenerator(), 0,
                                                         max_repetitions, var_binds))


#: ``snmp_engine`` option values: "fast" serves SNMPv2c with snmp_fast and SNMPv3 with snmp_fast_v3
#: (the protocols in snmp_usm.AUTH_PROTOCOLS/PRIV_PROTOCOLS; anything else falls back to pysnmp, logged);
#: "pysnmp" forces pysnmp for every request, for agents the fast path cannot serve
ENGINES = ("fast", "pysnmp")
DEFAULT_ENGINE = "fast"


def forget_agents(state: _SnmpState, wanted: set[tuple[str, int | None]]) -> None:
    """Drop the in-flight bounds and learned page sizes of agents not in ``wanted`` ((address, port or
    None), after a reload); a session still using one keeps its own reference."""
    keep = {(address, port or DEFAULT_PORT) for address, port in wanted}
    for learned in (state.agent_limits, state.agent_pages):
        for agent in [a for a in learned if a not in keep]:
            del learned[agent]


def _agent_limiter(state: _SnmpState, address: str, port: int) -> asyncio.Semaphore:
    from .snmp_fast import MAX_IN_FLIGHT_PER_AGENT

    limiter = state.agent_limits.get((address, port))
    if limiter is None:
        limiter = state.agent_limits[(address, port)] = asyncio.Semaphore(MAX_IN_FLIGHT_PER_AGENT)
    return limiter


def fast_v3_unserved(cred: SNMPCredential) -> str | None:
    """Why the fast path cannot serve this SNMPv3 credential, or None when it can."""
    try:
        from . import snmp_usm
    except ImportError as e:  # cryptography missing or too old for its decrepit ciphers
        return f"the fast SNMPv3 path cannot load: {e}"
    if cred.auth_protocol and cred.auth_protocol not in snmp_usm.AUTH_PROTOCOLS:
        return f"auth_protocol {cred.auth_protocol} is not one the fast path serves"
    if cred.priv_protocol and cred.priv_protocol not in snmp_usm.PRIV_PROTOCOLS:
        return f"priv_protocol {cred.priv_protocol} is not one the fast path serves"
    return None


_fallbacks_logged: set[str] = set()


def open_session(transports: Any, group: TargetGroup, host: Host, budget: ReadBudget | None = None
                 ) -> SnmpSessionBase:
    """A session for ``host`` of ``group``: credentials from the group, timing from its options, its
    bytes charged to ``budget`` (the collector's, restarted each poll; without one, each get and walk
    has the default budget of its own)."""
    session = _open_session(transports, group, host)
    session.pages = _state_for(transports).agent_pages.setdefault((host.address, session.port), AgentPages())
    if budget is not None:
        session.budget = budget
    return session


def _open_session(transports: Any, group: TargetGroup, host: Host) -> SnmpSessionBase:
    cred = group.credentials
    if not isinstance(cred, SNMPCredential):
        raise AuthError(f"group {group.name}: SNMP needs an snmp credential")
    opts = group.options
    timeout = float(getattr(opts, "snmp_timeout", None) or DEFAULT_TIMEOUT)
    retries = int(getattr(opts, "snmp_retries", DEFAULT_RETRIES))
    reps = int(getattr(opts, "max_repetitions", None) or DEFAULT_MAX_REPETITIONS)
    engine = getattr(opts, "snmp_engine", None) or DEFAULT_ENGINE
    port = host.port or DEFAULT_PORT
    if cred.version == "2c" and engine == "fast":
        from .snmp_fast import FastSession

        state = _state_for(transports)
        session = FastSession(_community(cred), host.address, port, timeout=timeout, retries=retries,
                              max_repetitions=reps, limiter=_agent_limiter(state, host.address, port))
        state.fast_sessions.add(session)
        return session
    if cred.version == "3" and engine == "fast":
        why = fast_v3_unserved(cred)
        if why is None:
            from .snmp_fast_v3 import FastV3Session

            state = _state_for(transports)
            auth_pw, priv_pw = _v3_passwords(cred)
            session = FastV3Session(
                (cred.username or "").encode(), cred.auth_protocol, auth_pw.encode() if auth_pw else None,
                cred.priv_protocol if cred.auth_protocol else None, priv_pw.encode() if priv_pw else None,
                (cred.context or "").encode(), host.address, port, timeout=timeout, retries=retries,
                max_repetitions=reps, limiter=_agent_limiter(state, host.address, port))
            state.fast_sessions.add(session)
            return session
        if cred.name not in _fallbacks_logged:
            _fallbacks_logged.add(cred.name)
            log.warning("credential %s: SNMPv3 on pysnmp rather than the fast path: %s", cred.name, why)
    return SnmpSession(_engine_for(transports, cred), _auth_data(cred), host.address, port,
                       timeout=timeout, retries=retries, max_repetitions=reps, context=cred.context,
                       secrets=secret_values(cred))


__all__ = ["SnmpSession", "SnmpSessionBase", "MAX_WALK_VARBINDS", "ENGINES", "Varbind", "open_session", "close_state", "format_oid", "parse_oid",
           "COUNTER32", "COUNTER64", "GAUGE", "INTEGER", "TIMETICKS", "STRING", "OTHER"]
