"""Interop suite, python-a2a's own mode: PyPI python-a2a 0.5.10 with its "Google A2A"
compatibility off, which is its default and how most of its users run it.

In that mode its client still posts JSON-RPC ``tasks/send`` to ``{url}/tasks/send`` with a
task id it chooses, but its messages are its own: one ``content`` object
(``{"type": "text", "text": ...}``) and a snake_case ``message_id`` instead of ``parts``.
Its ``ask`` (through ``send_message``) returns the first text part of the task's artifacts.
"""

from __future__ import annotations

import asyncio
import uuid

from collections.abc import Iterator

import pytest

from python_a2a import A2AClient, Message, MessageRole, TextContent
from python_a2a.models.task import Task, TaskState

from conftest import Wire, auth_headers


TIMEOUT_S = 30


@pytest.fixture(autouse=True)
def native_message_shape() -> Iterator[None]:
    """python-a2a's own message shape for the tests of this module (the session runs in its
    "Google A2A" mode, see conftest.py)."""
    Task.enable_google_a2a_compatibility(False)
    yield
    Task.enable_google_a2a_compatibility(True)


def client_for(base_url: str) -> A2AClient:
    return A2AClient(base_url, headers=auth_headers(), timeout=TIMEOUT_S)


def task_of(text: str, task_id: str, session_id: str) -> Task:
    message = Message(content=TextContent(text=text), role=MessageRole.USER)
    return Task(id=task_id, session_id=session_id, message=message.to_dict())


def test_ask_in_its_own_mode_is_answered(base_url, wire: Wire) -> None:
    client = client_for(base_url)
    assert client.ask('hello') == 'hello'

    # One tasks/send, with the message in python-a2a's own shape, answered without error.
    sends = [e for e in wire.posts() if (e.body or {}).get('method') == 'tasks/send']
    assert [e.url for e in sends] == [f'{base_url}/tasks/send'], [e.url for e in wire.posts()]
    params = sends[0].body['params']
    assert params['message']['content'] == {'type': 'text', 'text': 'hello'}
    assert 'parts' not in params['message']
    assert 'error' not in sends[0].response, sends[0].response
    result = sends[0].response['result']
    assert result['id'] == params['id'], 'the client-chosen task id was not kept'
    # Its message_id is the message's id.
    assert result['history'][0]['messageId'] == params['message']['message_id']


def test_its_chosen_id_is_kept_and_hold_waits_for_input(base_url, wire: Wire) -> None:
    client = client_for(base_url)
    task_id, session_id = str(uuid.uuid4()), str(uuid.uuid4())
    held = asyncio.run(client.send_task_async(task_of('hold', task_id, session_id)))
    assert 'error' not in wire.last_post('tasks/send').response
    assert held.id == task_id
    assert held.session_id == session_id
    assert held.status.state == TaskState.INPUT_REQUIRED
    question = held.status.message['parts'][0]['text']
    assert 'on hold' in question, held.status

    done = asyncio.run(client.send_task_async(task_of('done', task_id, session_id)))
    assert done.id == task_id
    assert done.status.state == TaskState.COMPLETED
    assert done.artifacts[0]['parts'][0]['text'] == 'done'
    got = client.get_task(task_id)
    assert (got.id, got.status.state) == (task_id, TaskState.COMPLETED)
