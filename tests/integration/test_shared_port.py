"""The port every process of `serve --processes N` binds (:func:`shared_port`): real sockets
on the loopback, served by asyncio as uvicorn serves them."""

from __future__ import annotations

import asyncio
import socket

import pytest

from lorebase.api.processes import shared_port

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


def _nodelay_of_a_connection(listener: socket.socket) -> int:
    """TCP_NODELAY of the connection asyncio accepts on ``listener`` (what uvicorn's server
    answers a client on)."""
    port = listener.getsockname()[1]

    async def main() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            accepted = writer.get_extra_info("socket")
            seen.set_result(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(connected, sock=listener)
        async with server:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                return await asyncio.wait_for(seen, 10)
            finally:
                writer.close()

    return asyncio.run(main())


def test_answers_on_the_shared_port_are_sent_at_once() -> None:
    """Nagle's algorithm is off on the connections of the shared port, as on those of a port
    uvicorn binds itself: with it on, each answer of `serve --processes 2` waited ~40 ms for
    the client's delayed acknowledgement (asyncio turns it off only on a socket made as TCP
    by name)."""
    listener = shared_port("127.0.0.1", 0)
    try:
        listener.listen()
        assert _nodelay_of_a_connection(listener) != 0
    finally:
        listener.close()


def test_every_process_binds_the_same_port() -> None:
    """A second process's socket joins the first's port (``SO_REUSEPORT``)."""
    first = shared_port("127.0.0.1", 0)
    try:
        port = first.getsockname()[1]
        second = shared_port("127.0.0.1", port)
        try:
            assert second.getsockname()[1] == port
            assert second.proto == socket.IPPROTO_TCP
        finally:
            second.close()
    finally:
        first.close()
