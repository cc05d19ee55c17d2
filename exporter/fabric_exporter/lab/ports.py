"""Free ports on 127.0.0.1 for the lab's servers (bound, read and released: the caller binds next)."""

from __future__ import annotations

import socket


def free_tcp_port() -> int:
    return free_tcp_ports(1)[0]


def free_tcp_ports(n: int) -> list[int]:
    """``n`` distinct free TCP ports (all held until all are found, so none is handed out twice)."""
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
