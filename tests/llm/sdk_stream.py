"""The official Python client (a2a-sdk 1.x, tests/interop's venv) streams a message to a
generated LLM project served by `cargo run` (infra/llm-check.sh), its model
tests/llm/scripted_model.py: the answer must reach the client in more than one artifact chunk,
the first of them before the model finished (the model holds the rest of its answer until this
client saw that chunk and releases it), and end COMPLETED with the model's whole text and the
task's token usage.

    python sdk_stream.py AGENT_URL MODEL_URL EXPECTED_TEXT
"""

from __future__ import annotations

import asyncio
import sys
import uuid

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState


def text_of(parts) -> str:
    return "".join(p.text for p in parts if p.WhichOneof("content") == "text")


async def main(agent: str, model: str, expected: str) -> None:
    async with httpx.AsyncClient(timeout=120) as http:
        client = await ClientFactory(
            ClientConfig(streaming=True, httpx_client=http)
        ).create_from_url(agent)
        message = Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(text="hello from the python client")],
        )
        chunks, states, task_id, released = [], [], "", False
        async for event in client.send_message(SendMessageRequest(message=message)):
            kind = event.WhichOneof("payload")
            if kind == "task":
                task_id = event.task.id
            elif kind == "status_update":
                states.append(event.status_update.status.state)
            elif kind == "artifact_update":
                chunks.append(event.artifact_update)
                if not released:
                    # The first chunk came while the model holds the rest: let it go on.
                    released = True
                    (await http.post(f"{model}/release")).raise_for_status()
        stored = await client.get_task(GetTaskRequest(id=task_id))
        await client.close()
    assert states and states[-1] == TaskState.TASK_STATE_COMPLETED, states
    assert len(chunks) > 1, f"the answer came in {len(chunks)} artifact chunk(s)"
    first = text_of(chunks[0].artifact.parts)
    assert first and expected.startswith(first) and first != expected, first
    # The last chunk is the whole answer (it replaces what was streamed).
    last = chunks[-1]
    assert last.last_chunk and not last.append, last
    assert text_of(last.artifact.parts) == expected, text_of(last.artifact.parts)
    assert stored.status.state == TaskState.TASK_STATE_COMPLETED, stored
    answer = "".join(text_of(a.parts) for a in stored.artifacts)
    assert answer == expected, answer
    usage = stored.metadata["tokenUsage"]
    assert usage["modelCalls"] == 1 and usage["totalTokens"] > 0, usage
    print(
        f"llm-check: the Python client got {len(chunks)} chunks, {answer!r}, "
        f"{int(usage['totalTokens'])} tokens",
        file=sys.stderr,
    )


asyncio.run(main(sys.argv[1].rstrip("/"), sys.argv[2].rstrip("/"), sys.argv[3]))
