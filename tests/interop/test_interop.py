"""Interop suite: the official Python SDK client (a2a-sdk 1.3.0) against our server.

Each test runs once per binding (JSONRPC and HTTP+JSON); the ``make_client``
fixture forces the client onto that binding. The behaviour of the agent
(``hello`` echo, ``hold``, ``slow N MS``) is fixed in
``shared/reference-agent.md``.

Nothing here sleeps to synchronise: streams are read to their end and webhook
deliveries are awaited on a queue, all under explicit timeouts.
"""

from __future__ import annotations

import asyncio
import json
import uuid

from collections.abc import AsyncIterator

import pytest

from google.protobuf.json_format import ParseDict

from a2a.client import Client
from a2a.types import (
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import (
    A2AError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from conftest import BINDINGS, RequestLog, WebhookReceiver


STREAM_TIMEOUT_S = 30.0
PUSH_TIMEOUT_S = 20.0

TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
}

STREAM_KINDS = ('task', 'message', 'status_update', 'artifact_update')
STREAM_JSON_KEYS = {'task', 'message', 'statusUpdate', 'artifactUpdate'}


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def user_message(
    text: str, *, task_id: str = '', context_id: str = ''
) -> Message:
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )


def kind(event: StreamResponse) -> str:
    k = event.WhichOneof('payload')
    assert k in STREAM_KINDS, f'StreamResponse without payload: {event}'
    return k


def state_name(state: int) -> str:
    return TaskState.Name(state)


def texts(parts) -> list[str]:
    return [p.text for p in parts if p.WhichOneof('content') == 'text']


async def collect(stream: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    """Read a stream to its end (the server closes it at the terminal state)."""
    events: list[StreamResponse] = []
    async with asyncio.timeout(STREAM_TIMEOUT_S):
        async for event in stream:
            events.append(event)
    return events


async def send_blocking(
    client: Client,
    message: Message,
    configuration: SendMessageConfiguration | None = None,
) -> Task:
    """Non-streaming SendMessage; the result must be a Task."""
    request = SendMessageRequest(message=message)
    if configuration is not None:
        request.configuration.CopyFrom(configuration)
    events = await collect(client.send_message(request))
    assert len(events) == 1, f'non-streaming send yielded {len(events)} results'
    assert kind(events[0]) == 'task', f'expected a Task result, got {events[0]}'
    return events[0].task


def echo_artifact_text(task: Task) -> str:
    echo = [a for a in task.artifacts if a.name == 'echo']
    assert len(echo) == 1, f'expected one artifact named "echo": {task.artifacts}'
    assert echo[0].artifact_id, 'artifact without artifactId'
    return ''.join(texts(echo[0].parts))


def assert_state(task: Task, state: int) -> None:
    assert task.status.state == state, (
        f'task {task.id}: expected {state_name(state)}, '
        f'got {state_name(task.status.state)}'
    )


# --------------------------------------------------------------------------
# card
# --------------------------------------------------------------------------


async def test_agent_card(agent_card, binding, make_client, base_url) -> None:
    card = agent_card
    assert card.name, 'card.name is empty'
    assert card.capabilities.HasField('streaming')
    assert card.capabilities.streaming is True
    assert card.capabilities.HasField('push_notifications')
    assert card.capabilities.push_notifications is True

    # The first interface of each binding, the one a 1.0 client takes; interfaces of older
    # protocol versions on the same binding may follow it.
    by_binding = {}
    for i in card.supported_interfaces:
        by_binding.setdefault(i.protocol_binding, i)
    for b in BINDINGS:
        assert b in by_binding, f'card lists no {b} interface: {by_binding}'
    iface = by_binding[binding]
    assert iface.protocol_version.split('.')[:2] == ['1', '0'], (
        f'{binding} interface protocolVersion is {iface.protocol_version!r}'
    )
    assert iface.url.startswith(('http://', 'https://')), iface.url

    # The SDK can build a client for this binding from the card.
    client = await make_client()
    assert client._transport is not None  # noqa: SLF001


# --------------------------------------------------------------------------
# SendMessage (blocking) / GetTask / ListTasks
# --------------------------------------------------------------------------


async def test_blocking_send_echo(
    make_client, agent_card, binding, request_log: RequestLog
) -> None:
    client = await make_client(streaming=False)
    msg = user_message('hello')
    task = await send_blocking(client, msg)

    assert task.id, 'server did not assign a task id'
    assert task.context_id, 'server did not assign a context id'
    assert_state(task, TaskState.TASK_STATE_COMPLETED)
    assert echo_artifact_text(task) == 'hello'
    # reference agent: the completed status message carries the same text
    assert task.status.HasField('message')
    assert texts(task.status.message.parts) == ['hello']
    assert task.status.message.role == Role.ROLE_AGENT

    # The request really went over the binding under test.
    iface_url = next(
        i.url
        for i in agent_card.supported_interfaces
        if i.protocol_binding == binding
    )
    method, url, body = request_log.entries[-1]
    assert method == 'POST'
    if binding == 'JSONRPC':
        assert url.rstrip('/') == iface_url.rstrip('/')
        assert json.loads(body)['method'] == 'SendMessage'
    else:
        assert url == iface_url.rstrip('/') + '/message:send'


async def test_get_task(make_client) -> None:
    client = await make_client()
    sent = await send_blocking(client, user_message('hello'))

    got = await client.get_task(GetTaskRequest(id=sent.id))
    assert got.id == sent.id
    assert got.context_id == sent.context_id
    assert_state(got, TaskState.TASK_STATE_COMPLETED)
    assert echo_artifact_text(got) == 'hello'

    # historyLength=0 means "no messages".
    no_history = await client.get_task(GetTaskRequest(id=sent.id, history_length=0))
    assert no_history.id == sent.id
    assert len(no_history.history) == 0, no_history.history

    # historyLength=1 means at most the most recent message.
    one = await client.get_task(GetTaskRequest(id=sent.id, history_length=1))
    assert len(one.history) <= 1


async def test_resent_message_returns_the_same_task(make_client) -> None:
    # A client retrying after a timeout sends the same message (same messageId) again: the
    # server answers with the task the first copy started instead of running it twice.
    client = await make_client(streaming=False)
    msg = user_message('hello once')
    first = await send_blocking(client, msg)
    again = await send_blocking(client, msg)
    assert again.id == first.id, f'a resent message made a second task: {again.id}'
    assert_state(again, TaskState.TASK_STATE_COMPLETED)
    assert echo_artifact_text(again) == 'hello once'


async def test_get_unknown_task_is_task_not_found(make_client) -> None:
    client = await make_client()
    with pytest.raises(TaskNotFoundError):
        await client.get_task(GetTaskRequest(id=str(uuid.uuid4())))


async def test_list_tasks_by_context(make_client) -> None:
    client = await make_client()
    first = await send_blocking(client, user_message('hello'))
    ctx = first.context_id
    # A new task (no taskId) in the same context.
    second = await send_blocking(client, user_message('hello', context_id=ctx))
    assert second.context_id == ctx
    assert second.id != first.id

    # An unrelated task in another context must not show up.
    other = await send_blocking(client, user_message('hello'))
    assert other.context_id != ctx

    listed = await client.list_tasks(ListTasksRequest(context_id=ctx))
    ids = [t.id for t in listed.tasks]
    assert sorted(ids) == sorted([first.id, second.id]), ids
    assert all(t.context_id == ctx for t in listed.tasks)
    assert listed.next_page_token == ''
    assert listed.total_size == 2
    for t in listed.tasks:
        assert_state(t, TaskState.TASK_STATE_COMPLETED)
        # includeArtifacts defaults to false: artifacts are omitted.
        assert len(t.artifacts) == 0, f'artifacts present without includeArtifacts: {t}'

    with_artifacts = await client.list_tasks(
        ListTasksRequest(context_id=ctx, include_artifacts=True)
    )
    assert len(with_artifacts.tasks) == 2
    for t in with_artifacts.tasks:
        assert echo_artifact_text(t) == 'hello'

    # Paging with a cursor walks both tasks exactly once.
    page1 = await client.list_tasks(ListTasksRequest(context_id=ctx, page_size=1))
    assert len(page1.tasks) == 1
    assert page1.next_page_token != ''
    page2 = await client.list_tasks(
        ListTasksRequest(
            context_id=ctx, page_size=1, page_token=page1.next_page_token
        )
    )
    assert len(page2.tasks) == 1
    assert page2.next_page_token == ''
    assert {page1.tasks[0].id, page2.tasks[0].id} == {first.id, second.id}


# --------------------------------------------------------------------------
# CancelTask
# --------------------------------------------------------------------------


async def test_cancel_held_task(make_client) -> None:
    client = await make_client()
    held = await send_blocking(client, user_message('hold'))
    # Blocking send returns at the interrupted state.
    assert_state(held, TaskState.TASK_STATE_INPUT_REQUIRED)

    canceled = await client.cancel_task(CancelTaskRequest(id=held.id))
    assert canceled.id == held.id
    assert_state(canceled, TaskState.TASK_STATE_CANCELED)

    after = await client.get_task(GetTaskRequest(id=held.id))
    assert_state(after, TaskState.TASK_STATE_CANCELED)

    # A terminal task cannot be canceled again.
    with pytest.raises(TaskNotCancelableError):
        await client.cancel_task(CancelTaskRequest(id=held.id))


async def test_cancel_unknown_task_is_task_not_found(make_client) -> None:
    client = await make_client()
    with pytest.raises(TaskNotFoundError):
        await client.cancel_task(CancelTaskRequest(id=str(uuid.uuid4())))


async def test_message_to_terminal_task_is_unsupported(make_client) -> None:
    client = await make_client()
    done = await send_blocking(client, user_message('hello'))
    assert_state(done, TaskState.TASK_STATE_COMPLETED)
    with pytest.raises(UnsupportedOperationError):
        await send_blocking(client, user_message('again', task_id=done.id))


# --------------------------------------------------------------------------
# Streaming
# --------------------------------------------------------------------------


async def test_streaming_send_slow(make_client) -> None:
    client = await make_client(streaming=True)
    events = await collect(
        client.send_message(SendMessageRequest(message=user_message('slow 3 50')))
    )
    kinds = [kind(e) for e in events]

    # Optionally the server re-sends a final Task snapshot before closing.
    if len(events) == 7 and kinds[-1] == 'task':
        assert_state(events[-1].task, TaskState.TASK_STATE_COMPLETED)
        events, kinds = events[:-1], kinds[:-1]

    assert kinds == [
        'task',
        'status_update',
        'artifact_update',
        'artifact_update',
        'artifact_update',
        'status_update',
    ], kinds

    task = events[0].task
    assert task.id and task.context_id
    assert task.status.state not in TERMINAL, state_name(task.status.state)

    for e in events[1:]:
        payload = getattr(e, kind(e))
        assert payload.task_id == task.id
        assert payload.context_id == task.context_id

    assert events[1].status_update.status.state == TaskState.TASK_STATE_WORKING

    chunks = [e.artifact_update for e in events[2:5]]
    assert len({c.artifact.artifact_id for c in chunks}) == 1, 'chunks of one artifact'
    assert chunks[0].artifact.artifact_id
    assert [c.append for c in chunks] == [False, True, True]
    assert [c.last_chunk for c in chunks] == [False, False, True]
    assert [''.join(texts(c.artifact.parts)) for c in chunks] == [
        'chunk-1 ',
        'chunk-2 ',
        'chunk-3 ',
    ]

    assert events[5].status_update.status.state == TaskState.TASK_STATE_COMPLETED

    # The stored task agrees with what was streamed.
    stored = await client.get_task(GetTaskRequest(id=task.id))
    assert_state(stored, TaskState.TASK_STATE_COMPLETED)
    assert len(stored.artifacts) == 1
    assert ''.join(texts(stored.artifacts[0].parts)) == 'chunk-1 chunk-2 chunk-3 '


async def test_subscribe_to_running_task(make_client) -> None:
    sender = await make_client(streaming=False)
    subscriber = await make_client(streaming=True)

    started = await send_blocking(
        sender,
        user_message('slow 5 200'),
        SendMessageConfiguration(return_immediately=True),
    )
    assert started.id
    assert started.status.state not in TERMINAL, (
        'returnImmediately send came back terminal: '
        + state_name(started.status.state)
    )

    events = await collect(subscriber.subscribe(SubscribeToTaskRequest(id=started.id)))
    assert events, 'subscription produced no events'

    # First event is the Task snapshot.
    assert kind(events[0]) == 'task', [kind(e) for e in events]
    snapshot = events[0].task
    assert snapshot.id == started.id
    assert snapshot.context_id == started.context_id
    assert snapshot.status.state not in TERMINAL

    for e in events[1:]:
        k = kind(e)
        assert k != 'message', 'a task stream must not carry a Message'
        assert getattr(e, k).task_id == started.id

    # The stream ends at the terminal state.
    last = events[-1]
    if kind(last) == 'task':
        final_state = last.task.status.state
    else:
        assert kind(last) == 'status_update', kind(last)
        final_state = last.status_update.status.state
    assert final_state == TaskState.TASK_STATE_COMPLETED, state_name(final_state)
    # Nothing non-terminal is reported after a terminal status.
    states = [
        e.status_update.status.state for e in events if kind(e) == 'status_update'
    ]
    assert all(s not in TERMINAL for s in states[:-1]), [state_name(s) for s in states]

    stored = await sender.get_task(GetTaskRequest(id=started.id))
    assert_state(stored, TaskState.TASK_STATE_COMPLETED)
    assert len(stored.artifacts) == 1
    assert ''.join(texts(stored.artifacts[0].parts)) == ''.join(
        f'chunk-{i} ' for i in range(1, 6)
    )

    # Subscribing to a terminal task is UnsupportedOperation.
    with pytest.raises(UnsupportedOperationError):
        await collect(subscriber.subscribe(SubscribeToTaskRequest(id=started.id)))


# --------------------------------------------------------------------------
# Push notification configs
# --------------------------------------------------------------------------


async def test_push_config_crud(make_client) -> None:
    client = await make_client()
    held = await send_blocking(client, user_message('hold'))
    assert_state(held, TaskState.TASK_STATE_INPUT_REQUIRED)

    # Nobody listens here; configs are deleted before the task changes again.
    url = f'https://example.com/a2a-webhook/{uuid.uuid4()}'
    token = str(uuid.uuid4())
    created = await client.create_task_push_notification_config(
        TaskPushNotificationConfig(
            task_id=held.id,
            url=url,
            token=token,
            authentication=AuthenticationInfo(scheme='Bearer', credentials='s3cret'),
        )
    )
    assert created.id, 'server did not assign a config id'
    assert created.task_id == held.id
    assert created.url == url
    assert created.token == token
    assert created.authentication.scheme.lower() == 'bearer'

    got = await client.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=held.id, id=created.id)
    )
    assert got.id == created.id
    assert got.task_id == held.id
    assert got.url == url
    # Secrets are written, never read back: no token, no credentials (the scheme stays).
    assert got.token == ''
    assert got.authentication.scheme.lower() == 'bearer'
    assert got.authentication.credentials == ''

    # A second config with a client-chosen id (the id is optional on create;
    # when given, it names the config).
    second_id = f'cfg-{uuid.uuid4()}'
    second = await client.create_task_push_notification_config(
        TaskPushNotificationConfig(task_id=held.id, id=second_id, url=url + '/2')
    )
    assert second.id == second_id
    assert second.id != created.id

    listed = await client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=held.id)
    )
    by_id = {c.id: c for c in listed.configs}
    assert set(by_id) == {created.id, second.id}, list(by_id)
    assert by_id[created.id].url == url
    assert by_id[created.id].token == ''
    assert by_id[created.id].authentication.credentials == ''
    assert all(c.task_id == held.id for c in listed.configs)

    await client.delete_task_push_notification_config(
        DeleteTaskPushNotificationConfigRequest(task_id=held.id, id=created.id)
    )
    listed = await client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=held.id)
    )
    assert [c.id for c in listed.configs] == [second.id]
    with pytest.raises(A2AError):
        await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=held.id, id=created.id)
        )

    await client.delete_task_push_notification_config(
        DeleteTaskPushNotificationConfigRequest(task_id=held.id, id=second.id)
    )
    listed = await client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=held.id)
    )
    assert len(listed.configs) == 0

    # Push ops on an unknown task: TaskNotFound.
    with pytest.raises(TaskNotFoundError):
        await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=str(uuid.uuid4()))
        )

    canceled = await client.cancel_task(CancelTaskRequest(id=held.id))
    assert_state(canceled, TaskState.TASK_STATE_CANCELED)


def _push_state(body: dict) -> str | None:
    if 'statusUpdate' in body:
        return body['statusUpdate'].get('status', {}).get('state')
    if 'task' in body:
        return body['task'].get('status', {}).get('state')
    return None


async def test_push_delivered_to_webhook(
    make_client, webhook: WebhookReceiver
) -> None:
    client = await make_client()
    held = await send_blocking(client, user_message('hold'))
    assert_state(held, TaskState.TASK_STATE_INPUT_REQUIRED)

    path = f'/webhook/{uuid.uuid4()}'
    token = f'tok-{uuid.uuid4()}'
    credentials = f'cred-{uuid.uuid4()}'
    created = await client.create_task_push_notification_config(
        TaskPushNotificationConfig(
            task_id=held.id,
            url=webhook.url(path),
            token=token,
            authentication=AuthenticationInfo(scheme='Bearer', credentials=credentials),
        )
    )
    assert created.id

    # The follow-up completes the held task (echo of the follow-up).
    done = await send_blocking(client, user_message('done', task_id=held.id))
    assert done.id == held.id
    assert_state(done, TaskState.TASK_STATE_COMPLETED)
    assert echo_artifact_text(done) == 'done'

    received = []
    async with asyncio.timeout(PUSH_TIMEOUT_S):
        while True:
            push = await webhook.received.get()
            received.append(push)

            assert push.method == 'POST', push
            assert push.path == path, push.path
            assert push.headers.get('x-a2a-notification-token') == token, push.headers
            assert push.headers.get('authorization') == f'Bearer {credentials}', (
                push.headers.get('authorization')
            )
            body = push.json()
            assert isinstance(body, dict), body
            present = STREAM_JSON_KEYS & set(body)
            assert len(present) == 1, f'push body is not a StreamResponse: {body}'
            # It parses as a 1.0 StreamResponse.
            event = ParseDict(body, StreamResponse(), ignore_unknown_fields=True)
            payload = getattr(event, kind(event))
            pushed_task_id = payload.id if kind(event) == 'task' else payload.task_id
            assert pushed_task_id == held.id

            if _push_state(body) == 'TASK_STATE_COMPLETED':
                break

    assert received, 'no push received'
