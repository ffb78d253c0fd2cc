"""Interop suite: the official Python SDK client of A2A 0.3 (a2a-sdk 0.3.26) against our server.

The same checks as the 1.0 suite (tests/interop/test_interop.py) where 0.3 has
the operation (0.3 has no ListTasks), once per binding: JSON-RPC and the 0.3
REST binding under ``/v1``. The agent's behaviour (``hello`` echo, ``hold``,
``slow N MS``) is fixed in ``shared/reference-agent.md``.

The 0.3 client offers no call for listing or deleting push configs (its
``Client`` has set/get only); those two go out as the 0.3 wire requests built
from the SDK's own request types and parsed with its response types.

Nothing here sleeps to synchronise: streams are read to their end and webhook
deliveries are awaited on a queue, all under explicit timeouts.
"""

from __future__ import annotations

import asyncio
import uuid

from collections.abc import AsyncIterator

import httpx
import pytest

from google.protobuf.json_format import ParseDict

from a2a.client import Client
from a2a.client.errors import (
    A2AClientError,
    A2AClientHTTPError,
    A2AClientJSONRPCError,
)
from a2a.grpc import a2a_pb2
from a2a.types import (
    AgentCard,
    DeleteTaskPushNotificationConfigParams,
    DeleteTaskPushNotificationConfigRequest,
    DeleteTaskPushNotificationConfigResponse,
    GetTaskPushNotificationConfigParams,
    JSONRPCErrorResponse,
    ListTaskPushNotificationConfigParams,
    ListTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigResponse,
    Message,
    MessageSendConfiguration,
    Part,
    PushNotificationAuthenticationInfo,
    PushNotificationConfig,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskIdParams,
    TaskPushNotificationConfig,
    TaskQueryParams,
    TaskState,
    TaskStatusUpdateEvent,
    TextPart,
)
from a2a.utils import proto_utils

from conftest import RequestLog, WebhookReceiver, new_http, transport_url


STREAM_TIMEOUT_S = 30.0
PUSH_TIMEOUT_S = 20.0

TERMINAL = {
    TaskState.completed,
    TaskState.failed,
    TaskState.canceled,
    TaskState.rejected,
}

# The A2A error codes (0.3 JSON-RPC), and the HTTP statuses the 0.3 REST
# binding gives them; the 0.3 REST client sees only the status. The 0.3 spec
# has no status table: both 0.3 SDK servers answer 404 and 409 (a2a-sdk's
# utils/error_handlers.py, a2a-js's mapErrorToStatus), and UnsupportedOperation
# with 501 (a2a-sdk) or 400 (a2a-js, and the 1.0 table).
TASK_NOT_FOUND = -32001
TASK_NOT_CANCELABLE = -32002
UNSUPPORTED_OPERATION = -32004
HTTP_STATUS = {
    TASK_NOT_FOUND: {404},
    TASK_NOT_CANCELABLE: {409},
    UNSUPPORTED_OPERATION: {400, 501},
}


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def user_message(text: str, *, task_id: str | None = None, context_id: str | None = None) -> Message:
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.user,
        parts=[Part(root=TextPart(text=text))],
        task_id=task_id,
        context_id=context_id,
    )


def texts(parts) -> list[str]:
    return [p.root.text for p in parts or [] if isinstance(p.root, TextPart)]


async def collect(stream: AsyncIterator) -> list:
    """Read a stream to its end (the server closes it at the terminal state).

    Each event is copied as it arrives: the SDK's task tracker appends later
    artifact chunks to the artifact object an earlier event carried.
    """
    events = []
    async with asyncio.timeout(STREAM_TIMEOUT_S):
        async for event in stream:
            if isinstance(event, tuple):
                event = tuple(e.model_copy(deep=True) if e is not None else None for e in event)
            events.append(event)
    return events


async def send_blocking(
    client: Client, message: Message, configuration: MessageSendConfiguration | None = None
) -> Task:
    """Non-streaming message/send; the result must be a Task."""
    events = await collect(client.send_message(message, configuration=configuration))
    assert len(events) == 1, f'non-streaming send yielded {len(events)} results'
    assert isinstance(events[0], tuple), f'expected a Task result, got {events[0]}'
    task, update = events[0]
    assert isinstance(task, Task) and update is None, events[0]
    return task


def echo_artifact_text(task: Task) -> str:
    echo = [a for a in task.artifacts or [] if a.name == 'echo']
    assert len(echo) == 1, f'expected one artifact named "echo": {task.artifacts}'
    assert echo[0].artifact_id, 'artifact without artifactId'
    return ''.join(texts(echo[0].parts))


def assert_state(task: Task, state: TaskState) -> None:
    assert task.status.state == state, (
        f'task {task.id}: expected {state.value}, got {task.status.state.value}'
    )


def assert_a2a_error(err: BaseException, binding: str, code: int) -> None:
    """The error the 0.3 client raised is the A2A error ``code`` in its binding's terms."""
    if binding == 'JSONRPC':
        assert isinstance(err, A2AClientJSONRPCError), repr(err)
        assert err.error.code == code, repr(err.error)
    else:
        assert isinstance(err, A2AClientHTTPError), repr(err)
        assert err.status_code in HTTP_STATUS[code], repr(err)


async def raw_jsonrpc(url: str, request) -> dict:
    """POST one SDK-built 0.3 JSON-RPC request, as the 0.3 client posts them."""
    async with new_http() as http:
        response = await http.post(url, json=request.model_dump(mode='json', exclude_none=True))
    assert response.status_code == 200, response.text
    return response.json()


async def list_configs(card: AgentCard, binding: str, task_id: str) -> list[TaskPushNotificationConfig]:
    """tasks/pushNotificationConfig/list, or GET /v1/tasks/{id}/pushNotificationConfigs."""
    url = transport_url(card, binding)
    if binding == 'JSONRPC':
        data = await raw_jsonrpc(
            url,
            ListTaskPushNotificationConfigRequest(
                id=str(uuid.uuid4()), params=ListTaskPushNotificationConfigParams(id=task_id)
            ),
        )
        response = ListTaskPushNotificationConfigResponse.model_validate(data)
        if isinstance(response.root, JSONRPCErrorResponse):
            raise A2AClientJSONRPCError(response.root)
        return response.root.result
    async with new_http() as http:
        response = await http.get(f'{url}/v1/tasks/{task_id}/pushNotificationConfigs')
    if response.status_code != 200:
        raise A2AClientHTTPError(response.status_code, response.text)
    listed = ParseDict(response.json(), a2a_pb2.ListTaskPushNotificationConfigResponse())
    return [proto_utils.FromProto.task_push_notification_config(c) for c in listed.configs]


async def delete_config(card: AgentCard, binding: str, task_id: str, config_id: str) -> None:
    """tasks/pushNotificationConfig/delete, or DELETE /v1/tasks/{id}/pushNotificationConfigs/{cid}."""
    url = transport_url(card, binding)
    if binding == 'JSONRPC':
        data = await raw_jsonrpc(
            url,
            DeleteTaskPushNotificationConfigRequest(
                id=str(uuid.uuid4()),
                params=DeleteTaskPushNotificationConfigParams(
                    id=task_id, push_notification_config_id=config_id
                ),
            ),
        )
        response = DeleteTaskPushNotificationConfigResponse.model_validate(data)
        if isinstance(response.root, JSONRPCErrorResponse):
            raise A2AClientJSONRPCError(response.root)
        return
    async with new_http() as http:
        response = await http.delete(f'{url}/v1/tasks/{task_id}/pushNotificationConfigs/{config_id}')
    if response.status_code >= 300:
        raise A2AClientHTTPError(response.status_code, response.text)


# --------------------------------------------------------------------------
# card
# --------------------------------------------------------------------------


async def test_agent_card(agent_card: AgentCard, binding, make_client, request_log: RequestLog, base_url) -> None:
    # The fixture validated the card against the 0.3 AgentCard model already.
    card = agent_card
    assert card.name, 'card.name is empty'
    assert card.protocol_version.split('.')[:2] == ['0', '3'], card.protocol_version
    assert card.capabilities.streaming is True
    assert card.capabilities.push_notifications is True
    url = transport_url(card, binding)
    assert url.startswith(('http://', 'https://')), url

    # The SDK builds a client for this binding from the card, which it found at
    # the 0.3 well-known path.
    client = await make_client()
    assert client._transport.url.rstrip('/') == url  # noqa: SLF001
    card_requests = [e for e in request_log.entries if e.method == 'GET']
    assert card_requests[0].url == f'{base_url}/.well-known/agent-card.json'


async def test_get_card(make_client, binding, request_log: RequestLog) -> None:
    # get_card fetches the authenticated extended card when the card says there is one
    # (agent/getAuthenticatedExtendedCard, or GET /v1/card).
    client = await make_client()
    card = await client.get_card()
    assert card.name
    assert card.protocol_version.split('.')[:2] == ['0', '3'], card.protocol_version
    if client._card.supports_authenticated_extended_card:  # noqa: SLF001
        last = request_log.entries[-1]
        if binding == 'JSONRPC':
            assert request_log.json_bodies()[-1]['method'] == 'agent/getAuthenticatedExtendedCard'
        else:
            assert last.url.endswith('/v1/card'), last.url
        assert last.status == 200


# --------------------------------------------------------------------------
# message/send (blocking) / tasks/get
# --------------------------------------------------------------------------


async def test_blocking_send_echo(make_client, agent_card, binding, request_log: RequestLog) -> None:
    client = await make_client()
    task = await send_blocking(client, user_message('hello'))

    assert task.id, 'server did not assign a task id'
    assert task.context_id, 'server did not assign a context id'
    assert task.kind == 'task'
    assert_state(task, TaskState.completed)
    assert echo_artifact_text(task) == 'hello'
    # reference agent: the completed status message carries the same text
    assert task.status.message is not None
    assert texts(task.status.message.parts) == ['hello']
    assert task.status.message.role == Role.agent

    # The request really went over the binding under test, as 0.3: no A2A-Version header.
    last = request_log.entries[-1]
    assert last.method == 'POST'
    assert 'a2a-version' not in last.headers, last.headers
    url = transport_url(agent_card, binding)
    if binding == 'JSONRPC':
        assert last.url.rstrip('/') == url
        assert request_log.json_bodies()[-1]['method'] == 'message/send'
    else:
        assert last.url == f'{url}/v1/message:send'


async def test_get_task(make_client) -> None:
    client = await make_client()
    sent = await send_blocking(client, user_message('hello'))

    got = await client.get_task(TaskQueryParams(id=sent.id))
    assert got.id == sent.id
    assert got.context_id == sent.context_id
    assert_state(got, TaskState.completed)
    assert echo_artifact_text(got) == 'hello'

    # historyLength=0 means "no messages".
    none = await client.get_task(TaskQueryParams(id=sent.id, history_length=0))
    assert none.id == sent.id
    assert not none.history, none.history
    # historyLength=1 means at most the most recent message.
    one = await client.get_task(TaskQueryParams(id=sent.id, history_length=1))
    assert len(one.history or []) <= 1


async def test_resent_message_returns_the_same_task(make_client) -> None:
    client = await make_client()
    msg = user_message('hello once')
    first = await send_blocking(client, msg)
    again = await send_blocking(client, msg)
    assert again.id == first.id, f'a resent message made a second task: {again.id}'
    assert_state(again, TaskState.completed)
    assert echo_artifact_text(again) == 'hello once'


async def test_get_unknown_task_is_task_not_found(make_client, binding) -> None:
    client = await make_client()
    with pytest.raises(A2AClientError) as err:
        await client.get_task(TaskQueryParams(id=str(uuid.uuid4())))
    assert_a2a_error(err.value, binding, TASK_NOT_FOUND)


# --------------------------------------------------------------------------
# tasks/cancel
# --------------------------------------------------------------------------


async def test_cancel_held_task(make_client, binding) -> None:
    client = await make_client()
    held = await send_blocking(client, user_message('hold'))
    # Blocking send returns at the interrupted state.
    assert_state(held, TaskState.input_required)

    canceled = await client.cancel_task(TaskIdParams(id=held.id))
    assert canceled.id == held.id
    assert_state(canceled, TaskState.canceled)

    after = await client.get_task(TaskQueryParams(id=held.id))
    assert_state(after, TaskState.canceled)

    # A terminal task cannot be canceled again.
    with pytest.raises(A2AClientError) as err:
        await client.cancel_task(TaskIdParams(id=held.id))
    assert_a2a_error(err.value, binding, TASK_NOT_CANCELABLE)


async def test_cancel_unknown_task_is_task_not_found(make_client, binding) -> None:
    client = await make_client()
    with pytest.raises(A2AClientError) as err:
        await client.cancel_task(TaskIdParams(id=str(uuid.uuid4())))
    assert_a2a_error(err.value, binding, TASK_NOT_FOUND)


async def test_message_to_terminal_task_is_unsupported(make_client, binding) -> None:
    client = await make_client()
    done = await send_blocking(client, user_message('hello'))
    assert_state(done, TaskState.completed)
    with pytest.raises(A2AClientError) as err:
        await send_blocking(client, user_message('again', task_id=done.id, context_id=done.context_id))
    assert_a2a_error(err.value, binding, UNSUPPORTED_OPERATION)


# --------------------------------------------------------------------------
# message/stream, tasks/resubscribe
# --------------------------------------------------------------------------


async def test_streaming_send_slow(make_client) -> None:
    client = await make_client(streaming=True)
    events = await collect(client.send_message(user_message('slow 3 50')))
    assert all(isinstance(e, tuple) for e in events), events
    updates = [update for _, update in events]

    # Optionally the server re-sends a final Task snapshot before closing.
    if len(updates) == 7 and updates[-1] is None:
        assert_state(events[-1][0], TaskState.completed)
        updates = updates[:-1]

    kinds = [type(u).__name__ if u is not None else 'Task' for u in updates]
    assert kinds == [
        'Task',
        'TaskStatusUpdateEvent',
        'TaskArtifactUpdateEvent',
        'TaskArtifactUpdateEvent',
        'TaskArtifactUpdateEvent',
        'TaskStatusUpdateEvent',
    ], kinds

    task = events[0][0]
    assert task.id and task.context_id
    for u in updates[1:]:
        assert u.task_id == task.id
        assert u.context_id == task.context_id

    working, *chunks, completed = updates[1:]
    assert isinstance(working, TaskStatusUpdateEvent)
    assert working.status.state == TaskState.working
    assert working.final is False

    assert all(isinstance(c, TaskArtifactUpdateEvent) for c in chunks)
    assert len({c.artifact.artifact_id for c in chunks}) == 1, 'chunks of one artifact'
    assert [bool(c.append) for c in chunks] == [False, True, True]
    assert [bool(c.last_chunk) for c in chunks] == [False, False, True]
    assert [''.join(texts(c.artifact.parts)) for c in chunks] == ['chunk-1 ', 'chunk-2 ', 'chunk-3 ']

    # 0.3 marks the last status event of a stream final.
    assert completed.status.state == TaskState.completed
    assert completed.final is True

    # The stored task agrees with what was streamed.
    stored = await client.get_task(TaskQueryParams(id=task.id))
    assert_state(stored, TaskState.completed)
    assert len(stored.artifacts) == 1
    assert ''.join(texts(stored.artifacts[0].parts)) == 'chunk-1 chunk-2 chunk-3 '


async def test_resubscribe_to_running_task(make_client, binding) -> None:
    sender = await make_client(polling=True)  # blocking: false
    subscriber = await make_client(streaming=True)

    started = await send_blocking(sender, user_message('slow 5 200'))
    assert started.id
    assert started.status.state not in TERMINAL, (
        'non-blocking send came back terminal: ' + started.status.state.value
    )

    events = await collect(subscriber.resubscribe(TaskIdParams(id=started.id)))
    assert events, 'resubscription produced no events'
    for task, update in events:
        assert task.id == started.id
        assert task.context_id == started.context_id
        if update is not None:
            assert update.task_id == started.id

    # The stream ends at the terminal state, marked final.
    last_task, last_update = events[-1]
    assert_state(last_task, TaskState.completed)
    if last_update is not None:
        assert isinstance(last_update, TaskStatusUpdateEvent), last_update
        assert last_update.final is True
    statuses = [u for _, u in events if isinstance(u, TaskStatusUpdateEvent)]
    assert all(s.status.state not in TERMINAL for s in statuses[:-1]), statuses
    assert all(not s.final for s in statuses[:-1]), statuses

    stored = await sender.get_task(TaskQueryParams(id=started.id))
    assert_state(stored, TaskState.completed)
    assert len(stored.artifacts) == 1
    assert ''.join(texts(stored.artifacts[0].parts)) == ''.join(f'chunk-{i} ' for i in range(1, 6))

    # Resubscribing to a terminal task is refused.
    with pytest.raises(A2AClientError) as err:
        await collect(subscriber.resubscribe(TaskIdParams(id=started.id)))
    if isinstance(err.value, A2AClientJSONRPCError):
        assert err.value.error.code == UNSUPPORTED_OPERATION, repr(err.value.error)
    else:
        # An error answer instead of a stream: the SDK reports the HTTP status.
        assert isinstance(err.value, A2AClientHTTPError), repr(err.value)
        assert err.value.status_code >= 400


# --------------------------------------------------------------------------
# tasks/pushNotificationConfig/*
# --------------------------------------------------------------------------


async def test_push_config_crud(make_client, agent_card, binding) -> None:
    client = await make_client()
    held = await send_blocking(client, user_message('hold'))
    assert_state(held, TaskState.input_required)

    # Nobody listens here; configs are deleted before the task changes again.
    url = f'https://example.com/a2a-webhook/{uuid.uuid4()}'
    token = str(uuid.uuid4())
    created = await client.set_task_callback(
        TaskPushNotificationConfig(
            task_id=held.id,
            push_notification_config=PushNotificationConfig(
                url=url,
                token=token,
                authentication=PushNotificationAuthenticationInfo(
                    schemes=['Bearer'], credentials='s3cret'
                ),
            ),
        )
    )
    config = created.push_notification_config
    assert config.id, 'server did not assign a config id'
    assert created.task_id == held.id
    assert config.url == url
    assert config.token == token
    assert [s.lower() for s in config.authentication.schemes] == ['bearer']

    got = await client.get_task_callback(
        GetTaskPushNotificationConfigParams(id=held.id, push_notification_config_id=config.id)
    )
    assert got.task_id == held.id
    assert got.push_notification_config.id == config.id
    assert got.push_notification_config.url == url
    # Secrets are written, never read back (in every version).
    assert not got.push_notification_config.token

    # A second config with a client-chosen id.
    second_id = f'cfg-{uuid.uuid4()}'
    second = await client.set_task_callback(
        TaskPushNotificationConfig(
            task_id=held.id,
            push_notification_config=PushNotificationConfig(id=second_id, url=url + '/2'),
        )
    )
    assert second.push_notification_config.id == second_id

    listed = await list_configs(agent_card, binding, held.id)
    by_id = {c.push_notification_config.id: c for c in listed}
    assert set(by_id) == {config.id, second_id}, list(by_id)
    assert by_id[config.id].push_notification_config.url == url
    assert all(c.task_id == held.id for c in listed)

    await delete_config(agent_card, binding, held.id, config.id)
    listed = await list_configs(agent_card, binding, held.id)
    assert [c.push_notification_config.id for c in listed] == [second_id]
    with pytest.raises(A2AClientError):
        await client.get_task_callback(
            GetTaskPushNotificationConfigParams(id=held.id, push_notification_config_id=config.id)
        )

    await delete_config(agent_card, binding, held.id, second_id)
    assert await list_configs(agent_card, binding, held.id) == []

    # Push config calls on an unknown task: TaskNotFound.
    with pytest.raises(A2AClientError) as err:
        await list_configs(agent_card, binding, str(uuid.uuid4()))
    assert_a2a_error(err.value, binding, TASK_NOT_FOUND)

    canceled = await client.cancel_task(TaskIdParams(id=held.id))
    assert_state(canceled, TaskState.canceled)


async def test_push_delivered_to_webhook(make_client, webhook: WebhookReceiver) -> None:
    client = await make_client()
    held = await send_blocking(client, user_message('hold'))
    assert_state(held, TaskState.input_required)

    path = f'/webhook/{uuid.uuid4()}'
    token = f'tok-{uuid.uuid4()}'
    credentials = f'cred-{uuid.uuid4()}'
    created = await client.set_task_callback(
        TaskPushNotificationConfig(
            task_id=held.id,
            push_notification_config=PushNotificationConfig(
                url=webhook.url(path),
                token=token,
                authentication=PushNotificationAuthenticationInfo(
                    schemes=['Bearer'], credentials=credentials
                ),
            ),
        )
    )
    assert created.push_notification_config.id

    # The follow-up completes the held task (echo of the follow-up).
    done = await send_blocking(
        client, user_message('done', task_id=held.id, context_id=held.context_id)
    )
    assert done.id == held.id
    assert_state(done, TaskState.completed)
    assert echo_artifact_text(done) == 'done'

    # A config set by a 0.3 client gets what a 0.3 receiver reads: the Task, 0.3-shaped.
    received = []
    async with asyncio.timeout(PUSH_TIMEOUT_S):
        while True:
            push = await webhook.received.get()
            received.append(push)
            assert push.method == 'POST', push
            assert push.path == path, push.path
            assert push.headers.get('x-a2a-notification-token') == token, push.headers
            assert push.headers.get('authorization') == f'Bearer {credentials}', push.headers
            body = push.json()
            assert isinstance(body, dict) and body.get('kind') == 'task', body
            pushed = Task.model_validate(body)
            assert pushed.id == held.id
            if pushed.status.state == TaskState.completed:
                assert echo_artifact_text(pushed) == 'done'
                break
    assert received, 'no push received'


# --------------------------------------------------------------------------
# one task, every version
# --------------------------------------------------------------------------


async def test_task_from_0_3_client_read_with_1_0_request(make_client, binding, base_url) -> None:
    client = await make_client()
    sent = await send_blocking(client, user_message('hello'))

    # The 1.0 interfaces of the same card (1.0 field names).
    async with new_http() as http:
        raw_card = (await http.get(f'{base_url}/.well-known/agent-card.json')).json()
        ifaces = {
            i['protocolBinding']: i['url'].rstrip('/')
            for i in raw_card.get('supportedInterfaces', [])
            if i.get('protocolVersion', '').startswith('1.')
        }
        assert binding in ifaces, f'no 1.0 {binding} interface: {raw_card.get("supportedInterfaces")}'
        headers = {'A2A-Version': '1.0'}
        if binding == 'JSONRPC':
            response = await http.post(
                ifaces[binding],
                headers=headers,
                json={'jsonrpc': '2.0', 'id': 1, 'method': 'GetTask', 'params': {'id': sent.id}},
            )
            assert response.status_code == 200, response.text
            body = response.json()
            assert 'error' not in body, body
            task = body['result']
        else:
            response = await http.get(f'{ifaces[binding]}/tasks/{sent.id}', headers=headers)
            assert response.status_code == 200, response.text
            task = response.json()

    assert task['id'] == sent.id
    assert task['contextId'] == sent.context_id
    assert task['status']['state'] == 'TASK_STATE_COMPLETED'
    assert 'kind' not in task, 'a 1.0 answer carries no 0.3 kind discriminator'
    echo = [a for a in task['artifacts'] if a.get('name') == 'echo']
    assert [p.get('text') for p in echo[0]['parts']] == ['hello']
