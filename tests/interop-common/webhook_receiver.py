"""A real webhook receiver on 127.0.0.1, for the Python interop suites of every version.

Plain asyncio, no dependencies beyond the standard library, so each suite's venv (with its own
a2a-sdk release) can import it: the suites' conftest.py put this folder on sys.path.
"""

from __future__ import annotations

import asyncio
import json

from dataclasses import dataclass


@dataclass
class ReceivedPush:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes

    def json(self) -> object:
        return json.loads(self.body)


class WebhookReceiver:
    """Minimal HTTP/1.1 server; every request is put on ``self.received``.

    It answers 200 with ``{}`` and closes the connection, which every HTTP
    client handles.
    """

    def __init__(self) -> None:
        self.received: asyncio.Queue[ReceivedPush] = asyncio.Queue()
        self._server: asyncio.base_events.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._handle, host='127.0.0.1', port=0
        )
        self.port = self._server.sockets[0].getsockname()[1]

    def url(self, path: str) -> str:
        return f'http://127.0.0.1:{self.port}{path}'

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            request_line = (await reader.readline()).decode('latin-1').strip()
            if not request_line:
                return
            method, path, _ = request_line.split(' ', 2)
            headers: dict[str, str] = {}
            while True:
                line = (await reader.readline()).decode('latin-1')
                if line in ('\r\n', '\n', ''):
                    break
                name, _, value = line.partition(':')
                headers[name.strip().lower()] = value.strip()
            body = b''
            if 'content-length' in headers:
                body = await reader.readexactly(int(headers['content-length']))
            elif headers.get('transfer-encoding', '').lower() == 'chunked':
                while True:
                    size = int((await reader.readline()).strip(), 16)
                    if size == 0:
                        await reader.readline()
                        break
                    body += await reader.readexactly(size)
                    await reader.readline()
            resp = b'{}'
            writer.write(
                b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n'
                + f'Content-Length: {len(resp)}\r\n'.encode()
                + b'Connection: close\r\n\r\n'
                + resp
            )
            await writer.drain()
            await self.received.put(ReceivedPush(method, path, headers, body))
        finally:
            writer.close()
