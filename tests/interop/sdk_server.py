"""An A2A 1.0 agent built on the official Python SDK's server (a2a-sdk), for testing clients.

The `a2a` command and the a2a-client crate are tested against it as well as against
a2a-local, so that they are not tuned to one server. It serves the same two skills the
clients' tests use, with the same text commands as a2a-lambda's reference agent:

- ``slow [CHUNKS=5] [INTERVAL_MS=200]``: streams CHUNKS artifact chunks ``chunk-1 ``, …,
  INTERVAL_MS apart, then completes;
- ``hold``: asks for input (INPUT_REQUIRED); the follow-up completes the task as an echo of it;
- ``fail``: ends the task FAILED with a reason;
- anything else: completes with an artifact ``echo`` holding the text.

(``hold`` and ``fail`` make it the other agent of a2a-lambda's ``delegate`` tests.)

Usage: ``python sdk_server.py [--port 0]``. It prints ``serving on http://127.0.0.1:PORT``
on stderr once it accepts connections (port 0 picks a free one), and serves the card at
``/.well-known/agent-card.json``, JSON-RPC at ``/jsonrpc`` and HTTP+JSON at ``/``, with
in-memory tasks and push configs (its pushes are unsigned).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys

import httpx
import uvicorn

from starlette.applications import Starlette

from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events.event_queue_v2 import EventQueue
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks.base_push_notification_sender import BasePushNotificationSender
from a2a.server.tasks.inmemory_push_notification_config_store import (
    InMemoryPushNotificationConfigStore,
)
from a2a.server.tasks.inmemory_task_store import InMemoryTaskStore
from a2a.server.tasks.task_updater import TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    TaskState,
)


def numbers(text: str, defaults: list[int]) -> list[int]:
    """The integers after the first word, or the defaults."""
    out = list(defaults)
    for i, word in enumerate(text.split()[1 : len(defaults) + 1]):
        if word.isdigit():
            out[i] = int(word)
    return out


class EchoSlowAgent(AgentExecutor):
    """``slow N MS`` streams chunks; anything else is echoed."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        text = context.get_user_input().strip()
        say = lambda words: updater.new_agent_message([Part(text=words)])
        if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.add_artifact(
                [Part(text=text)], artifact_id=f'{task.id}-echo', name='echo'
            )
            await updater.complete(say(text))
        elif text == 'hold':
            await updater.requires_input(say('The task is on hold: send anything to complete it.'))
        elif text == 'fail':
            await updater.failed(say('The fail skill always fails.'))
        elif text.split()[:1] == ['slow']:
            chunks, interval_ms = numbers(text, [5, 200])
            await updater.start_work()
            for i in range(1, chunks + 1):
                await asyncio.sleep(interval_ms / 1000)
                await updater.add_artifact(
                    [Part(text=f'chunk-{i} ')],
                    artifact_id=f'{task.id}-slow',
                    name='slow',
                    append=i > 1,
                    last_chunk=i == chunks,
                )
            await updater.complete()
        else:
            await updater.add_artifact(
                [Part(text=text)], artifact_id=f'{task.id}-echo', name='echo'
            )
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            await updater.update_status(TaskState.TASK_STATE_CANCELED)


def card(base: str) -> AgentCard:
    return AgentCard(
        name='SDK echo agent',
        description='An a2a-sdk (Python) server: echo and slow streaming.',
        version='1.0.0',
        supported_interfaces=[
            AgentInterface(
                url=f'{base}/jsonrpc', protocol_binding='JSONRPC', protocol_version='1.0'
            ),
            AgentInterface(url=base, protocol_binding='HTTP+JSON', protocol_version='1.0'),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[
            AgentSkill(
                id='echo',
                name='Echo',
                description='Echoes the text back as an artifact.',
                tags=['sdk'],
                examples=['hello'],
            ),
            AgentSkill(
                id='slow',
                name='Slow stream',
                description='Streams CHUNKS chunks INTERVAL_MS apart: slow [CHUNKS] [INTERVAL_MS].',
                tags=['sdk', 'streaming'],
                examples=['slow 5 200'],
            ),
        ],
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--port', type=int, default=0)
    args = parser.parse_args()

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', args.port))
    base = f'http://127.0.0.1:{sock.getsockname()[1]}'

    agent_card = card(base)
    push_store = InMemoryPushNotificationConfigStore()
    handler = DefaultRequestHandlerV2(
        agent_executor=EchoSlowAgent(),
        task_store=InMemoryTaskStore(),
        agent_card=agent_card,
        push_config_store=push_store,
        push_sender=BasePushNotificationSender(httpx.AsyncClient(), push_store),
    )
    routes = [
        *create_agent_card_routes(agent_card, cache_control='public, max-age=60'),
        *create_jsonrpc_routes(handler, '/jsonrpc'),
        *create_rest_routes(handler),
    ]
    server = uvicorn.Server(
        uvicorn.Config(Starlette(routes=routes), log_level='warning', lifespan='off')
    )
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if serving.done():
            await serving
            return
        await asyncio.sleep(0.05)
    print(f'serving on {base}', file=sys.stderr, flush=True)
    await serving


if __name__ == '__main__':
    asyncio.run(main())
