"""Interop suite: PyPI python-a2a 0.5.10, an early-protocol (pre-0.2) client, against our server.

What it sends is read from its source (see README.md): the card at
``/.well-known/agent.json``, and ``tasks/send``, ``tasks/get`` and
``tasks/cancel`` as JSON-RPC, each to ``{url}/<method>``. The agent's
behaviour (``hello`` echo, ``hold``) is fixed in ``shared/reference-agent.md``.
"""

from __future__ import annotations

import asyncio
import uuid

import requests

from python_a2a import A2AClient, Message, MessageRole, TextContent
from python_a2a.client.streaming import StreamingClient
from python_a2a.models.task import Task, TaskState

from conftest import Wire, auth_headers


TIMEOUT_S = 30

TASK_NOT_FOUND = -32001
TASK_NOT_CANCELABLE = -32002


def client_for(base_url: str) -> A2AClient:
    return A2AClient(base_url, headers=auth_headers(), timeout=TIMEOUT_S)


def user_message(text: str) -> Message:
    return Message(content=TextContent(text=text), role=MessageRole.USER)


def new_task(text: str, *, task_id: str | None = None, session_id: str | None = None) -> Task:
    """A Task as the client builds one: a client-chosen id, a session, the message."""
    return Task(
        id=task_id or str(uuid.uuid4()),
        session_id=session_id or str(uuid.uuid4()),
        message=user_message(text).to_dict(),
    )


def send_task(client: A2AClient, task: Task) -> Task:
    return asyncio.run(client.send_task_async(task))


def part_texts(parts) -> list[str]:
    return [p.get('text') for p in parts or [] if p.get('type') == 'text']


def rpc_error(exchange) -> dict:
    assert exchange.status == 200, (exchange.status, exchange.response)
    assert exchange.response is not None and 'error' in exchange.response, exchange.response
    return exchange.response['error']


# --------------------------------------------------------------------------


def test_agent_card(base_url, wire: Wire) -> None:
    client = client_for(base_url)

    first = wire.entries[0]
    assert (first.method, first.url) == ('GET', f'{base_url}/.well-known/agent.json')
    assert first.status == 200
    card = first.response
    # The early card's required fields.
    for name in ('name', 'url', 'version', 'capabilities', 'skills'):
        assert name in card, f'early card without {name}: {card}'
    assert card['capabilities'].get('streaming') is True
    assert card['capabilities'].get('pushNotifications') is True
    # The client read it (it falls back to "Unknown Agent" when it cannot).
    assert client.agent_card.name == card['name'] != 'Unknown Agent'
    assert client.agent_card.skills, 'the client read no skills'


def test_send_message_echo(base_url, wire: Wire) -> None:
    client = client_for(base_url)
    reply = client.send_message(user_message('hello'))

    assert reply.role == MessageRole.AGENT
    assert reply.content.text == 'hello', reply

    # One tasks/send to {url}/tasks/send, answered in the early shape.
    assert [e.url for e in wire.posts()] == [f'{base_url}/tasks/send']
    sent = wire.last_post('tasks/send')
    assert sent.status == 200
    params = sent.body['params']
    assert part_texts(params['message']['parts']) == ['hello']
    assert 'messageId' not in params['message'], 'early messages carry no messageId'
    result = sent.response['result']
    assert result['id'] == params['id'], 'the client-chosen task id was not honoured'
    assert result['sessionId'] == params['sessionId']
    assert result['status']['state'] == 'completed'
    assert [part_texts(a['parts']) for a in result['artifacts']] == [['hello']]
    assert all(p['type'] == 'text' for a in result['artifacts'] for p in a['parts'])


def test_get_task(base_url, wire: Wire) -> None:
    client = client_for(base_url)
    sent = send_task(client, new_task('hello'))
    assert sent.status.state == TaskState.COMPLETED

    got = client.get_task(sent.id)
    assert got.id == sent.id
    assert got.session_id == sent.session_id
    assert got.status.state == TaskState.COMPLETED
    assert [part_texts(a['parts']) for a in got.artifacts] == [['hello']]
    exchange = wire.last_post('tasks/get')
    assert exchange.url == f'{base_url}/tasks/get'
    # historyLength 0 (the client's default): no messages.
    assert exchange.body['params']['historyLength'] == 0
    assert not exchange.response['result'].get('history'), exchange.response


def test_follow_up_continues_the_task_by_its_id(base_url, wire: Wire) -> None:
    client = client_for(base_url)
    task_id, session_id = str(uuid.uuid4()), str(uuid.uuid4())
    held = send_task(client, new_task('hold', task_id=task_id, session_id=session_id))
    assert held.id == task_id
    assert wire.last_post('tasks/send').response['result']['status']['state'] == 'input-required'
    assert held.status.state == TaskState.INPUT_REQUIRED

    done = send_task(client, new_task('done', task_id=task_id, session_id=session_id))
    assert done.id == task_id
    assert done.session_id == session_id
    assert done.status.state == TaskState.COMPLETED
    assert [part_texts(a['parts']) for a in done.artifacts] == [['done']]


def test_cancel_held_task(base_url, wire: Wire) -> None:
    client = client_for(base_url)
    held = send_task(client, new_task('hold'))
    assert held.status.state == TaskState.INPUT_REQUIRED

    canceled = client.cancel_task(held.id)
    exchange = wire.last_post('tasks/cancel')
    assert exchange.url == f'{base_url}/tasks/cancel'
    assert exchange.response['result']['status']['state'] == 'canceled'
    assert canceled.id == held.id
    assert canceled.status.state == TaskState.CANCELED

    assert client.get_task(held.id).status.state == TaskState.CANCELED

    # A terminal task cannot be canceled again (the client hides the error: read the wire).
    client.cancel_task(held.id)
    assert rpc_error(wire.last_post('tasks/cancel'))['code'] == TASK_NOT_CANCELABLE


def test_unknown_task_is_task_not_found(base_url, wire: Wire) -> None:
    client = client_for(base_url)
    unknown = str(uuid.uuid4())
    client.get_task(unknown)
    assert rpc_error(wire.last_post('tasks/get'))['code'] == TASK_NOT_FOUND
    client.cancel_task(unknown)
    assert rpc_error(wire.last_post('tasks/cancel'))['code'] == TASK_NOT_FOUND


def test_task_from_early_client_read_with_1_0_request(base_url) -> None:
    # The early client names the task and the session; a 1.0 client finds the same task by
    # that id, in the context named by the session.
    client = client_for(base_url)
    task_id, session_id = str(uuid.uuid4()), str(uuid.uuid4())
    sent = send_task(client, new_task('hello', task_id=task_id, session_id=session_id))
    assert sent.status.state == TaskState.COMPLETED

    card = requests.get(f'{base_url}/.well-known/agent-card.json', timeout=TIMEOUT_S).json()
    jsonrpc = [
        i['url']
        for i in card.get('supportedInterfaces', [])
        if i.get('protocolBinding') == 'JSONRPC' and i.get('protocolVersion', '').startswith('1.')
    ]
    assert jsonrpc, f'no 1.0 JSON-RPC interface: {card.get("supportedInterfaces")}'
    response = requests.post(
        jsonrpc[0],
        headers={'A2A-Version': '1.0', **auth_headers()},
        json={'jsonrpc': '2.0', 'id': 1, 'method': 'GetTask', 'params': {'id': task_id}},
        timeout=TIMEOUT_S,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert 'error' not in body, body
    task = body['result']
    assert task['id'] == task_id
    assert task['contextId'] == session_id
    assert task['status']['state'] == 'TASK_STATE_COMPLETED'
    echo = [a for a in task['artifacts'] if a.get('name') == 'echo']
    assert [p.get('text') for p in echo[0]['parts']] == ['hello']


def resubscribe(base_url: str, task_id: str) -> list[Task]:
    """Every Task python-a2a's streaming client yields for ``tasks/resubscribe``."""
    client = StreamingClient(base_url, headers=auth_headers(), timeout=TIMEOUT_S)

    async def collect() -> list[Task]:
        return [task async for task in client.tasks_resubscribe(task_id)]

    return asyncio.run(collect())


def test_resubscribe_gives_the_state_of_a_held_or_finished_task(base_url) -> None:
    # python-a2a posts tasks/resubscribe to {url}/tasks/stream and reads each event's data as
    # a Task, stopping at an `event: complete`.
    client = client_for(base_url)
    held = send_task(client, new_task('hold'))
    assert held.status.state == TaskState.INPUT_REQUIRED
    tasks = resubscribe(base_url, held.id)
    assert [(t.id, t.status.state) for t in tasks] == [(held.id, TaskState.INPUT_REQUIRED)]

    # A finished task: its final state, not an error.
    done = send_task(client, new_task('hello'))
    assert done.status.state == TaskState.COMPLETED
    tasks = resubscribe(base_url, done.id)
    assert [(t.id, t.status.state) for t in tasks] == [(done.id, TaskState.COMPLETED)]
