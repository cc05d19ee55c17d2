"""What every SNMP session does whatever moves its PDUs: GET scalars, and GETBULK walks that stop at
the subtree's end, refuse non-increasing OIDs, bound their length and shrink max-repetitions when the
agent answers tooBig. Subclasses (pysnmp in snmp.py, the plain UDP client in snmp_fast.py) implement
one request each and raise a PollError subclass on every failure, so a walk that stops half-way is
never returned as if it were the whole table.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from itertools import islice
from operator import itemgetter, lt

from ..errors import PollError, PollTimeoutError
from .base import ReadBudget
from .snmp_ber import END_OF_MIB_VIEW, EXCEPTIONS, Varbind

log = logging.getLogger("fabric_exporter.snmp")

_OID, _KIND, _VALUE = itemgetter(0), itemgetter(1), itemgetter(2)

#: the agent's UDP port when a host names none
DEFAULT_PORT = 161
#: a walk longer than this is a looping or misbehaving agent, not a table
MAX_WALK_VARBINDS = 2_000_000
#: GETBULK repetitions whose answer fits one 1500-byte datagram (25 Counter64 varbinds of an
#: interface column, SNMPv3 headers included; snmp_exporter's default). See SnmpSession.walk.
FRAGMENT_SAFE_REPETITIONS = 25
#: the first page of a walk whose size is unknown (no ``expected_rows``): small, then doubled per
#: page. A big first page of a small table costs the agent (and the daemon) varbinds past its end,
#: and a slow agent serving several such pages at once answers past its timeout.
FIRST_PAGE_REPETITIONS = FRAGMENT_SAFE_REPETITIONS


@dataclass
class AgentPages:
    """What a loop learned about one agent's GETBULK pages, shared by the sessions of every poll:
    the largest max-repetitions it answers (lowered by tooBig or by big pages lost on the way)."""

    max_repetitions: int | None = None


#: RFC 3416 error-status names, by value
ERROR_STATUS = ("noError", "tooBig", "noSuchName", "badValue", "readOnly", "genErr", "noAccess", "wrongType",
                "wrongLength", "wrongEncoding", "wrongValue", "noCreation", "inconsistentValue",
                "resourceUnavailable", "commitFailed", "undoFailed", "authorizationError", "notWritable",
                "inconsistentName")
TOO_BIG = 1


def format_oid(oid: tuple[int, ...]) -> str:
    return ".".join(map(str, oid))


def parse_oid(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.strip(".").split("."))


def response_size(vbs: list[Varbind]) -> int:
    """About the bytes these varbinds took on the wire: their OIDs' arcs, their values, 4 of framing
    each. Both request paths charge the same figure against the poll's ReadBudget."""
    size = sum(map(len, map(_OID, vbs))) + 13 * len(vbs)  # 4 of framing, 9 for a number (or none)
    for value in map(_VALUE, vbs):
        if value.__class__ is not int and isinstance(value, (bytes, str)):
            size += len(value) - 9
    return size


class TooBig(PollError):
    """The agent answered tooBig: the response would not fit its message size."""

    reason = "partial"


class SnmpSessionBase:
    """Requests to one agent. ``get``/``walk`` raise PollTimeoutError, AuthError, ConnectError or PollError."""

    description: str
    timeout: float
    retries: int
    #: a hint appended to timeouts (v2c agents stay silent on a wrong community)
    timeout_hint = ""

    def __init__(self, address: str, port: int, *, timeout: float, retries: int, max_repetitions: int):
        self.address = address
        self.port = port
        self.description = f"snmp://{address}:{port}"
        self.timeout = timeout
        self.retries = retries
        self.configured_repetitions = max_repetitions  # the target's max_repetitions option
        #: PDUs sent and varbinds received by this session (for benchmarks and debugging)
        self.requests = 0
        self.varbinds = 0
        #: the agent has answered this session before: a later silence on a big page is then
        #: taken as its answer lost on the way (IP fragments dropped), not as the agent gone
        self.answered = False
        #: page sizes learned about the agent; open_session hands over the loop's, kept across polls
        self.pages = AgentPages()
        self.fragment_fallbacks = 0  # walks that fell back to FRAGMENT_SAFE_REPETITIONS (tests, debugging)
        #: the bytes a poll may read: open_session hands over the collector's (restarted each poll);
        #: without one (tools, benchmarks) each get/walk has a default budget of its own
        self.budget: ReadBudget | None = None

    @property
    def max_repetitions(self) -> int:
        """The largest page this session asks: the configured size, or the smaller one learned about
        the agent (``pages``: tooBig, big pages lost on the way), in this poll or an earlier one."""
        learned = self.pages.max_repetitions
        return self.configured_repetitions if learned is None else min(learned, self.configured_repetitions)

    def close(self) -> None:
        """Release what the session holds alone (the fast path's UDP socket; pysnmp's belong to its engine)."""

    # -- one request each; subclasses -----------------------------------------------------------

    async def _get_request(self, what: str, oids: list[tuple[int, ...]]) -> list[Varbind]:
        raise NotImplementedError

    async def _bulk_request(self, what: str, oid: tuple[int, ...], max_repetitions: int) -> list[Varbind]:
        raise NotImplementedError

    # -- errors both paths report alike ---------------------------------------------------------

    def timeout_error(self, what: str) -> PollTimeoutError:
        tries = self.retries + 1
        return PollTimeoutError(f"{self.description}: {what}: no response after {tries} "
                           f"request{'s' if tries > 1 else ''} of {self.timeout:g}s{self.timeout_hint}")

    def status_error(self, what: str, status: int, index: int) -> PollError:
        # pysnmp hands over any INTEGER: one of thousands of digits must not fail str() (int's 4,300-digit limit)
        name = ERROR_STATUS[status] if 0 <= status < len(ERROR_STATUS) else (
            f"error-status {status}" if abs(status) < 1 << 63 else f"an error-status of {status.bit_length()} bits")
        cls = TooBig if status == TOO_BIG else PollError
        return cls(f"{self.description}: {what}: agent error {name} at varbind {index}", reason="partial")

    # -- the operations collectors use ----------------------------------------------------------

    async def get(self, oids: list[tuple[int, ...]]) -> dict[tuple[int, ...], Varbind | None]:
        """GET scalars; a missing object maps to None."""
        self.requests += 1
        vbs = await self._get_request("get", oids)
        self.answered = True
        (self.budget or ReadBudget()).charge(response_size(vbs), f"{self.description}: get")
        out: dict[tuple[int, ...], Varbind | None] = {}
        for vb in vbs:
            self.varbinds += 1
            out[vb.oid] = None if vb.kind in EXCEPTIONS else vb
        return out

    async def walk(self, root: tuple[int, ...], *, max_repetitions: int | None = None,
                   expected_rows: int | None = None) -> list[Varbind]:
        """Every varbind under ``root``, in OID order, fetched with GETBULK. Complete or an exception.

        ``expected_rows`` (the row count of the previous walk) spreads the rows evenly over the
        fewest pages: 64 rows at max-repetitions 25 are fetched as 3 x 22 rather than 3 x 25, since
        every varbind past the subtree costs as much to decode as a useful one. Without it the first
        page asks FIRST_PAGE_REPETITIONS and each next one twice as many, up to max-repetitions.
        An agent answering tooBig gets half as many repetitions, down to one; one that answered
        before but not a page of more than FRAGMENT_SAFE_REPETITIONS is asked again at that size (a
        page of 100 Counter64s is a ~3 KB datagram, in IP fragments on a 1500-byte path, and some
        networks drop fragments). Either smaller size is kept in ``pages``, for later polls too.
        """
        limit = min(max_repetitions or self.max_repetitions, self.max_repetitions)
        if expected_rows:
            wanted = expected_rows + 1  # one past the end shows where the subtree ends
            pages = -(-wanted // limit)
            reps = -(-wanted // pages)
            grow = False
        else:
            reps, grow = min(limit, FIRST_PAGE_REPETITIONS), True
        n = len(root)
        budget = self.budget or ReadBudget()
        out: list[Varbind] = []
        current = root
        what = f"walk {format_oid(root)}"
        while True:
            self.requests += 1
            try:
                vbs = await self._bulk_request(what, current, reps)
            except TooBig:
                if reps > 1:
                    reps = limit = max(1, reps // 2)
                    self._keep_smaller_pages(reps)
                    continue
                raise
            except PollError as e:
                if isinstance(e, PollTimeoutError) and self.answered and reps > FRAGMENT_SAFE_REPETITIONS:
                    log.warning("%s: no answer to a GETBULK of %d repetitions from an agent that answered "
                                "before; asking %d from now on (IP fragments dropped on the way?)",
                                self.description, reps, FRAGMENT_SAFE_REPETITIONS)
                    reps = limit = FRAGMENT_SAFE_REPETITIONS
                    self._keep_smaller_pages(reps)
                    self.fragment_fallbacks += 1
                    continue
                if out:  # the table was cut off: say so, never hand back the first part as all of it
                    e.args = (f"{e.args[0]} (table incomplete: cut off after {len(out)} varbinds)",)
                raise
            self.answered = True
            if not vbs:
                raise PollError(f"{self.description}: {what}: empty GETBULK response", reason="partial")
            try:
                budget.charge(response_size(vbs), f"{self.description}: {what}")
            except PollError as e:
                e.args = (f"{e.args[0]} (table incomplete: cut off after {len(out)} varbinds)",)
                raise
            # Every answer must move the walk on (a strictly greater OID) or end it: anything else
            # would re-send the same GETBULK until the deadline. A page wholly inside the subtree
            # (its OIDs strictly increasing from past ``current``, the last one under ``root``, so
            # every one between is under it too) and without exceptions is taken whole, its checks
            # done by C loops; any other page goes varbind by varbind below, which says what is wrong.
            oids = list(map(_OID, vbs))
            if (current < oids[0] and oids[-1][:n] == root and EXCEPTIONS.isdisjoint(map(_KIND, vbs))
                    and all(map(lt, oids, islice(oids, 1, None)))):
                out += vbs
                self.varbinds += len(vbs)
                current = oids[-1]
                vbs = ()
            for vb in vbs:
                oid = vb.oid
                if oid[:n] != root or vb.kind == END_OF_MIB_VIEW:
                    return out
                if vb.kind in EXCEPTIONS:  # RFC 3416 4.2.3: a GETBULK answer never carries noSuch*
                    raise PollError(f"{self.description}: {what}: agent answered {vb.kind} inside the walk of "
                                    f"{format_oid(root)} (at {format_oid(oid)}; table incomplete after "
                                    f"{len(out)} varbinds)", reason="partial")
                if oid <= current:
                    raise PollError(f"{self.description}: {what}: agent returned non-increasing OID "
                                    f"{format_oid(oid)} after {format_oid(current)} (table incomplete)",
                                    reason="partial")
                current = oid
                out.append(vb)
                self.varbinds += 1
            if len(out) > MAX_WALK_VARBINDS:
                raise PollError(f"{self.description}: {what}: more than {MAX_WALK_VARBINDS} varbinds; "
                                f"stopping (agent loop?)", reason="partial")
            if grow:
                reps = min(2 * reps, limit)

    def _keep_smaller_pages(self, reps: int) -> None:
        """This session's later walks, and later polls' sessions, ask at most ``reps``."""
        self.pages.max_repetitions = min(self.pages.max_repetitions or reps, reps)
