"""gnmi_switch's connection to one switch: the gRPC channel (TLS by default, ``insecure`` only when
said), the credentials as metadata, the SubscribeRequest of a dialect's paths, one Subscribe ONCE
read up to its ``sync_response``, and gRPC status codes as the exporter's reasons."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable

from ...errors import AuthError, ConnectError, PollError, PollTimeoutError, TargetConfigError
from ...parsers import gnmi as p
from .dialects import GnmiPath
from .options import GnmiSwitchOptions

# -- gRPC status -> reasons --------------------------------------------------------------------------------

_TLS_WORDS = ("ssl", "handshake", "certificate", "tls")
# grpc-python's own details when a request write lost the race with the target's status (grpc/grpc#36066)
CORE_WRITE_RACE = "Internal error from Core"


def error_from_status(code_name: str, details: str, where: str) -> PollError:
    """A gRPC status (by name: ``UNAVAILABLE`` ...) as the exporter's PollError with its reason."""
    msg = f"{where}: gNMI {code_name}: {(details or '').strip()[:300]}"
    if code_name == "UNAVAILABLE":
        if any(w in (details or "").lower() for w in _TLS_WORDS):
            return AuthError(msg)  # the TLS handshake failed: a trust problem, not an unreachable switch
        return ConnectError(msg)
    if code_name in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
        return AuthError(msg)
    if code_name == "DEADLINE_EXCEEDED":
        return PollTimeoutError(msg)
    if code_name in ("INVALID_ARGUMENT", "NOT_FOUND", "UNIMPLEMENTED", "FAILED_PRECONDITION"):
        return TargetConfigError(msg)
    return PollError(msg, reason="command_failed")


def _pb():
    try:
        import grpc
        from gnmi_pb import gnmi_pb2, gnmi_pb2_grpc
    except ModuleNotFoundError as e:  # the [gnmi] extra is not installed
        raise PollError(f"gnmi_switch needs grpcio and gnmi-pb (pip install 'fabric-exporter[gnmi]'): {e}",
                        reason="internal") from None
    return grpc, gnmi_pb2, gnmi_pb2_grpc


def to_path(gnmi_pb2: Any, xpath: str, target: str = "") -> Any:
    elems = [gnmi_pb2.PathElem(name=name, key=keys) for name, keys in p.parse_xpath(xpath)]
    return gnmi_pb2.Path(elem=elems, target=target)


class GnmiSession:
    """The channel to one switch and what every call on it needs. ``remaining`` gives the current
    poll's seconds left (the deadline of calls that have none of their own)."""

    def __init__(self, options: GnmiSwitchOptions, host: Any, sample_interval: float,
                 remaining: Callable[[], float]) -> None:
        self.options = options
        self.host = host
        self.sample_interval = sample_interval
        self.remaining = remaining
        self._channel: Any = None
        self._channel_loop: asyncio.AbstractEventLoop | None = None

    @property
    def where(self) -> str:
        host = self.host
        return f"{host.address}:{host.port or self.options.port}" if host else "?"

    def channel(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._channel is not None and self._channel_loop is loop:
            return self._channel
        grpc, _, _ = _pb()
        o = self.options
        address = self.where
        channel_options = [("grpc.max_receive_message_length", 64 << 20)]
        if o.insecure:
            self._channel = grpc.aio.insecure_channel(address, options=channel_options)
        else:
            try:
                root = Path(o.ca_file).read_bytes() if o.ca_file else None
                key = Path(o.key_file).read_bytes() if o.key_file else None
                chain = Path(o.cert_file).read_bytes() if o.cert_file else None
            except OSError as e:
                raise AuthError(f"{address}: cannot read a TLS file: {e}") from None
            if o.tls_server_name:
                channel_options.append(("grpc.ssl_target_name_override", o.tls_server_name))
            creds = grpc.ssl_channel_credentials(root_certificates=root, private_key=key, certificate_chain=chain)
            self._channel = grpc.aio.secure_channel(address, creds, options=channel_options)
        self._channel_loop = loop
        return self._channel

    def metadata(self) -> tuple[tuple[str, str], ...]:
        o = self.options
        if not o.username_file:
            return ()
        try:
            user = Path(o.username_file).read_text().strip()
            password = Path(o.password_file or "").read_text().strip()
        except OSError as e:
            raise AuthError(f"{self.where}: cannot read the gNMI credentials: {e}") from None
        return (("username", user), ("password", password))

    def request(self, target: str, paths: list[GnmiPath], mode: str) -> Any:
        _, g, _ = _pb()
        subs = []
        for gp in paths:
            sub_mode = g.ON_CHANGE if (gp.on_change and mode == "stream") else g.SAMPLE
            subs.append(g.Subscription(path=to_path(g, gp.xpath), mode=sub_mode,
                                       sample_interval=int(self.sample_interval * 1e9) if sub_mode == g.SAMPLE else 0))
        list_mode = {"once": g.SubscriptionList.ONCE, "stream": g.SubscriptionList.STREAM}[mode]
        prefix = g.Path(target=target) if target else None
        return g.SubscribeRequest(subscribe=g.SubscriptionList(prefix=prefix, subscription=subs, mode=list_mode,
                                                               encoding=g.JSON_IETF))

    async def status_error(self, e: Any) -> PollError:
        code, details = e.code().name, e.details() or ""
        if code == "INTERNAL" and details == CORE_WRITE_RACE:
            code, details = await self._real_status(code, details)
        return error_from_status(code, details, self.where)

    async def _real_status(self, code: str, details: str) -> tuple[str, str]:
        """The status a target sent when grpc-python's aio client replaced it with its own INTERNAL.

        A target that ends a Subscribe before reading the request (as gNMI servers do on a bad
        password) races the client's write of that request; when the write loses, grpc-python reports
        ``INTERNAL: Internal error from Core`` instead of the target's status (grpc/grpc#36066). A
        unary Capabilities call with the same credentials has no request stream to race and gets the
        target's own answer; only a failure there replaces the INTERNAL."""
        grpc, g, g_grpc = _pb()
        try:
            await g_grpc.gNMIStub(self.channel()).Capabilities(
                g.CapabilityRequest(), metadata=self.metadata(), timeout=max(0.5, min(5.0, self.remaining())))
        except grpc.aio.AioRpcError as e:
            return e.code().name, e.details() or ""
        return code, details

    async def once(self, target: str, paths: list[GnmiPath], on_update: Callable[[Any], None],
                   timeout: float | None = None) -> None:
        """One Subscribe ONCE of ``paths``: every update handed to ``on_update`` up to the sync."""
        grpc, _, g_grpc = _pb()
        stub = g_grpc.gNMIStub(self.channel())
        call = stub.Subscribe(iter([self.request(target, paths, "once")]), metadata=self.metadata(),
                              timeout=timeout or self.remaining())
        try:
            async for response in call:
                if response.sync_response:
                    break
                if response.HasField("update"):
                    on_update(response)
        except grpc.aio.AioRpcError as e:
            raise await self.status_error(e) from None
        finally:
            call.cancel()

    async def close(self) -> None:
        if self._channel is not None:
            try:
                await self._channel.close()
            except Exception:
                pass
            self._channel = None
