"""The stack of the A2A-Lite Matrix suite, started once for the module.

- Synapse (pinned, from PyPI) on 127.0.0.1 with SQLite, its config generated into a temporary
  directory by ``python -m synapse.app.homeserver --generate-config`` and adjusted for a test
  (a free port, open registration, no rate limits for the test user, our registration file).
- ``a2a-local`` (``$A2A_LOCAL_BIN``, else ``target/debug/a2a-local``) as the application
  service: ``--lite-matrix-homeserver`` and ``--lite-matrix-registration``.
- a matrix-nio client, ``@claw:localhost``, playing an OpenClaw-style agent: it opens a room,
  invites the bridge's user and talks A2A-Lite there (gives tasks, and answers the tasks our
  agent's ``delegate lite:matrix:<room> …`` gives it).

Nothing sleeps to synchronise: every wait is a /sync long poll or an HTTP poll with a deadline.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_asyncio
from nio import AsyncClient, InviteMemberEvent, RoomMemberEvent, RoomMessage

REPO = Path(__file__).resolve().parents[2]
SERVER_NAME = 'localhost'
LOCALPART = 'a2a'
BRIDGE = f'@{LOCALPART}:{SERVER_NAME}'
# Generous: a debug build on a busy two-core machine; nothing should take this long.
TIMEOUT_S = float(os.environ.get('A2A_LITE_MATRIX_TIMEOUT', '60'))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, what: str, log: Path) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f'{what} exited early:\n{log.read_text()[-4000:]}')
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.1)
    raise RuntimeError(f'{what} did not answer {url} in {TIMEOUT_S}s:\n{log.read_text()[-4000:]}')


def a2a_local_binary() -> str:
    if os.environ.get('A2A_LOCAL_BIN'):
        return os.environ['A2A_LOCAL_BIN']
    target = Path(os.environ.get('CARGO_TARGET_DIR', REPO / 'target'))
    if not target.is_absolute():
        target = REPO / target
    return str(target / 'debug' / 'a2a-local')


@dataclass
class Stack:
    homeserver: str
    a2a: str
    hs_token: str
    dir: Path
    procs: list = field(default_factory=list)

    def a2a_get(self, path: str) -> dict:
        request = urllib.request.Request(self.a2a + path, headers={'A2A-Version': '1.0'})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    def a2a_post(self, path: str, body: dict) -> dict:
        request = urllib.request.Request(
            self.a2a + path, data=json.dumps(body).encode(), method='POST',
            headers={'A2A-Version': '1.0', 'Content-Type': 'application/json'})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    def task_state(self, task_id: str, wanted: str, saying: str | None = None) -> dict:
        """The task once it is in ``wanted`` (with a status message ``saying``, if given): an
        HTTP poll with a deadline."""
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            task = self.a2a_get(f'/tasks/{task_id}')
            said = [p.get('text') for p in task['status'].get('message', {}).get('parts', [])]
            if task['status']['state'] == wanted and (saying is None or said == [saying]):
                return task
            assert time.monotonic() < deadline, f'task {task_id} is not {wanted}: {task}'
            time.sleep(0.1)

    def transaction(self, txn_id: str, events: list, token: str | None) -> tuple[int, dict]:
        """PUTs a transaction to the application service, as the homeserver would."""
        headers = {'Content-Type': 'application/json'}
        if token is not None:
            headers['Authorization'] = f'Bearer {token}'
        request = urllib.request.Request(
            f'{self.a2a}/a2a-lite/matrix/_matrix/app/v1/transactions/{txn_id}',
            data=json.dumps({'events': events}).encode(),
            headers=headers,
            method='PUT',
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b'{}')


def start_stack(base: Path) -> Stack:
    hs_port = free_port()
    homeserver = f'http://127.0.0.1:{hs_port}'
    hs_token = secrets.token_urlsafe(24)
    as_token = secrets.token_urlsafe(24)
    registration = base / 'a2a-lite-registration.yaml'

    def write_registration(url: str) -> None:
        registration.write_text(
            f'id: a2a-lite\n'
            f'url: {url}\n'
            f'as_token: {as_token}\n'
            f'hs_token: {hs_token}\n'
            f'sender_localpart: {LOCALPART}\n'
            f'rate_limited: false\n'
            f'namespaces:\n'
            f'  users:\n'
            f'    - exclusive: true\n'
            f'      regex: "@{LOCALPART}:{SERVER_NAME}"\n'
            f'  aliases: []\n'
            f'  rooms: []\n'
        )

    # a2a-local first (it reads the tokens; the homeserver needs its URL in the file).
    write_registration('http://127.0.0.1:1/a2a-lite/matrix')
    a2a_log = base / 'a2a-local.log'
    a2a = subprocess.Popen(
        [a2a_local_binary(), '--addr', '127.0.0.1:0', '--data-dir', str(base / 'a2a'),
         '--lite-matrix-homeserver', homeserver,
         '--lite-matrix-registration', str(registration)],
        stdout=subprocess.DEVNULL, stderr=open(a2a_log, 'w'),
        env={**os.environ, 'NO_COLOR': '1', 'RUST_LOG': 'info'},
    )
    stack = Stack(homeserver=homeserver, a2a='', hs_token=hs_token, dir=base, procs=[a2a])
    deadline = time.monotonic() + TIMEOUT_S
    while not stack.a2a:
        if a2a.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f'a2a-local did not start:\n{a2a_log.read_text()}')
        found = re.search(r'serving on (http://[0-9.:]+)', a2a_log.read_text())
        if found:
            stack.a2a = found.group(1)
        else:
            time.sleep(0.05)
    write_registration(f'{stack.a2a}/a2a-lite/matrix')

    config = base / 'homeserver.yaml'
    data = base / 'synapse'
    data.mkdir()
    subprocess.run(
        [sys.executable, '-m', 'synapse.app.homeserver', '--server-name', SERVER_NAME,
         '--config-path', str(config), '--data-directory', str(data),
         '--generate-config', '--report-stats=no'],
        check=True, cwd=base, capture_output=True,
    )
    # Later keys win in Synapse's YAML loader: the test's settings go last.
    with config.open('a') as f:
        f.write(f"""
listeners:
  - port: {hs_port}
    bind_addresses: ['127.0.0.1']
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]
        compress: false
enable_registration: true
enable_registration_without_verification: true
app_service_config_files: ['{registration}']
trusted_key_servers: []
suppress_key_server_warning: true
report_stats: false
rc_message: {{per_second: 1000, burst_count: 1000}}
rc_registration: {{per_second: 1000, burst_count: 1000}}
rc_login: {{address: {{per_second: 1000, burst_count: 1000}}, account: {{per_second: 1000, burst_count: 1000}}, failed_attempts: {{per_second: 1000, burst_count: 1000}}}}
rc_joins: {{local: {{per_second: 1000, burst_count: 1000}}, remote: {{per_second: 1000, burst_count: 1000}}}}
rc_invites: {{per_room: {{per_second: 1000, burst_count: 1000}}, per_user: {{per_second: 1000, burst_count: 1000}}}}
""")
    hs_log = base / 'synapse.log'
    synapse = subprocess.Popen(
        [sys.executable, '-m', 'synapse.app.homeserver', '--config-path', str(config)],
        stdout=open(hs_log, 'w'), stderr=subprocess.STDOUT, cwd=base,
    )
    stack.procs.append(synapse)
    wait_http(f'{homeserver}/_matrix/client/versions', synapse, 'Synapse', hs_log)
    return stack


@pytest.fixture(scope='module')
def stack():
    with tempfile.TemporaryDirectory(prefix='a2a-lite-matrix-') as tmp:
        s = start_stack(Path(tmp))
        try:
            yield s
        finally:
            for proc in reversed(s.procs):
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
            if os.environ.get('A2A_LITE_MATRIX_KEEP_LOGS'):
                for log in ('a2a-local.log', 'synapse.log'):
                    print(f'---- {log} ----\n{(s.dir / log).read_text()[-8000:]}')


class Claw:
    """An OpenClaw-style agent on matrix-nio: it talks A2A-Lite in its rooms."""

    def __init__(self, client: AsyncClient):
        self.client = client
        # Messages of the bridge, by room, in order; and how many each test has read.
        self.heard: dict[str, list] = {}
        self.read: dict[str, int] = {}
        self.joined: set[str] = set()

    async def sync_once(self) -> None:
        response = await self.client.sync(timeout=1000)
        for room_id, room in getattr(response, 'rooms', None).join.items():
            for event in room.timeline.events:
                if isinstance(event, RoomMessage) and event.sender == BRIDGE:
                    self.heard.setdefault(room_id, []).append(event)
                if isinstance(event, RoomMemberEvent) and event.state_key == BRIDGE \
                        and event.membership == 'join':
                    self.joined.add(room_id)

    async def open_room(self) -> str:
        """A new room with the bridge in it."""
        created = await self.client.room_create(invite=[BRIDGE])
        room_id = created.room_id
        deadline = time.monotonic() + TIMEOUT_S
        while room_id not in self.joined:
            assert time.monotonic() < deadline, 'the bridge did not join the room it was invited to'
            await self.sync_once()
        return room_id

    async def say(self, room_id: str, text: str) -> str:
        response = await self.client.room_send(
            room_id, 'm.room.message', {'msgtype': 'm.text', 'body': text})
        return response.event_id

    async def next(self, room_id: str):
        """The bridge's next message in the room."""
        deadline = time.monotonic() + TIMEOUT_S
        while len(self.heard.get(room_id, [])) <= self.read.get(room_id, 0):
            assert time.monotonic() < deadline, f'the bridge said nothing more in {room_id}'
            await self.sync_once()
        event = self.heard[room_id][self.read.get(room_id, 0)]
        self.read[room_id] = self.read.get(room_id, 0) + 1
        return event


@pytest_asyncio.fixture(scope='module', loop_scope='module')
async def claw(stack):
    client = AsyncClient(stack.homeserver, '@claw:localhost')
    registered = await client.register('claw', secrets.token_urlsafe(12))
    assert getattr(registered, 'access_token', None), registered
    client.access_token = registered.access_token
    client.user_id = registered.user_id
    client.device_id = registered.device_id
    agent = Claw(client)
    await agent.sync_once()
    try:
        yield agent
    finally:
        await client.close()
