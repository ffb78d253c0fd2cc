"""A2A-Lite over Matrix, end to end: a real Synapse pushes the room's events to a2a-local (an
application service), and an OpenClaw-style agent on matrix-nio discovers it, gives it tasks,
answers its question, cancels, and gets its results in the room; the tasks are A2A tasks."""

from __future__ import annotations

import json
import re
import uuid

import pytest

from conftest import BRIDGE

pytestmark = pytest.mark.asyncio(loop_scope='module')


def a2a_task_of(ack_body: str) -> str:
    found = re.search(r'A2A task ([0-9a-f-]{36})', ack_body)
    assert found, ack_body
    return found.group(1)


async def test_discover_gets_the_card_as_a_notice(claw):
    room = await claw.open_room()
    await claw.say(room, '[A2A:discover]\nWhat can you do?')
    card = await claw.next(room)
    assert card.source['content']['msgtype'] == 'm.notice'
    assert card.body.startswith('[A2A:card]\nI am '), card.body
    json_card = json.loads(card.body.split('```json', 1)[1].rsplit('```', 1)[0])
    assert json_card['protocol'] == 'a2a-lite/1.0'
    assert json_card['channels'] == [f'matrix:{room}']
    assert {'echo', 'hold', 'job'} <= {s['id'] for s in json_card['skills']}


async def test_a_task_runs_as_an_a2a_task_and_its_result_comes_to_the_room(claw, stack):
    room = await claw.open_room()
    await claw.say(room, '[A2A:task id=claw-1 skill=echo]\nhello from claw')
    ack = await claw.next(room)
    assert ack.body.startswith('[A2A:ack task=claw-1]\n'), ack.body
    result = await claw.next(room)
    assert result.body == '[A2A:result task=claw-1 state=completed]\nhello from claw'
    task = stack.a2a_get(f'/tasks/{a2a_task_of(ack.body)}')
    assert task['status']['state'] == 'TASK_STATE_COMPLETED'
    meta = task['history'][0]['metadata']['a2aLite']
    assert meta == {'channel': 'matrix', 'room': room, 'sender': '@claw:localhost',
                    'taskId': 'claw-1', 'skill': 'echo'}
    listed = stack.a2a_get('/tasks?pageSize=100')
    assert task['id'] in [t['id'] for t in listed['tasks']]


async def test_a_question_is_answered_in_the_room_and_a_job_is_cancelled(claw, stack):
    room = await claw.open_room()
    await claw.say(room, '[A2A:task id=q1]\nhold')
    assert (await claw.next(room)).body.startswith('[A2A:ack task=q1]')
    question = await claw.next(room)
    assert question.body.startswith('[A2A:status task=q1 state=input-required]\n'), question.body
    assert '[A2A:task id=q1]' in question.body
    await claw.say(room, '[A2A:task id=q1]\nhere is my answer')
    assert (await claw.next(room)).body == '[A2A:ack task=q1]\nReceived your answer.'
    assert (await claw.next(room)).body == \
        '[A2A:result task=q1 state=completed]\nhere is my answer'

    await claw.say(room, '[A2A:task id=long-1]\njob 3 60000')
    ack = await claw.next(room)
    working = await claw.next(room)
    assert working.body.startswith('[A2A:status task=long-1 state=working]'), working.body
    await claw.say(room, '[A2A:cancel task=long-1 reason=enough]')
    ended = await claw.next(room)
    assert ended.body.startswith('[A2A:result task=long-1 state=cancelled]'), ended.body
    task = stack.a2a_get(f'/tasks/{a2a_task_of(ack.body)}')
    assert task['status']['state'] == 'TASK_STATE_CANCELED'


async def test_chat_is_ignored_and_malformed_markers_are_explained(claw):
    room = await claw.open_room()
    await claw.say(room, 'hello everyone, [A2A:task id=x] is how you ask')
    await claw.say(room, '[A2A:result task=x state=completed]\nnot for you')
    await claw.say(room, '[A2A:task]\ndo something')
    reply = await claw.next(room)
    assert reply.body.startswith('Your A2A message was not accepted: [A2A:task] needs id='), \
        reply.body
    assert reply.body.endswith('Nothing was started.')
    # Nothing was said about the first two: the next thing the bridge says is the card.
    await claw.say(room, '[A2A:discover]')
    assert (await claw.next(room)).body.startswith('[A2A:card]')


async def test_transactions_are_checked_and_idempotent(claw, stack):
    room = await claw.open_room()
    event = {'type': 'm.room.message', 'room_id': room, 'sender': '@claw:localhost',
             'event_id': '$replayed-discover', 'origin_server_ts': 1,
             'content': {'msgtype': 'm.text', 'body': '[A2A:discover]'}}
    assert stack.transaction('t-no-token', [event], None)[0] == 401
    status, body = stack.transaction('t-wrong', [event], 'not-the-hs-token')
    assert (status, body['errcode']) == (403, 'M_FORBIDDEN')
    # The same transaction twice: one card.
    for _ in range(2):
        assert stack.transaction('t-replayed', [event], stack.hs_token) == (200, {})
    card = await claw.next(room)
    assert card.body.startswith('[A2A:card]')
    await claw.say(room, '[A2A:cancel task=nothing-here]')
    after = await claw.next(room)
    assert 'there is no task "nothing-here" of yours here' in after.body, after.body
    assert after.sender == BRIDGE


async def test_delegate_gives_the_room_agent_a_task_and_its_result_is_ours(claw, stack):
    room = await claw.open_room()
    other = await claw.open_room()
    sent = stack.a2a_post('/message:send', {
        'message': {'messageId': str(uuid.uuid4()), 'role': 'ROLE_USER',
                    'parts': [{'text': f'delegate lite:matrix:{room} summarise the thread'}]},
        'configuration': {'returnImmediately': True},
    })
    ours = sent['task']['id']
    # The room agent (claw) is given the task in the room, by the bridge's user.
    given = await claw.next(room)
    assert given.sender == BRIDGE
    found = re.fullmatch(r'\[A2A:task id=(\S+)\]\nsummarise the thread', given.body)
    assert found, given.body
    lite_id = found.group(1)

    await claw.say(room, f'[A2A:ack task={lite_id}]')
    await claw.say(room, f'[A2A:status task={lite_id} state=working]\nReading the thread.')
    stack.task_state(ours, 'TASK_STATE_WORKING', saying='Reading the thread.')
    # The same result said in another room changes nothing (the room is the credential).
    await claw.say(other, f'[A2A:result task={lite_id} state=completed]\nForged summary.')
    await claw.say(room, f'[A2A:result task={lite_id} state=completed]\nSummary: all good.')
    task = stack.task_state(ours, 'TASK_STATE_COMPLETED')
    texts = [p.get('text') for a in task.get('artifacts', []) for p in a['parts']]
    assert texts == ['Summary: all good.'], task
    # Nothing was said back to the room agent's answers: the next thing the bridge says is
    # the card.
    await claw.say(room, '[A2A:discover]')
    assert (await claw.next(room)).body.startswith('[A2A:card]')
