#!/usr/bin/env python3
"""Checks of Switchyard's A2A server with the official A2A Python SDK (PyPI `a2a-sdk`).

Usage: python3 infra/scripts/a2a_clients.py --base-url http://127.0.0.1:PORT --key KEY --restricted-key RKEY
       python3 infra/scripts/a2a_clients.py --base-url http://127.0.0.1:PORT --deployed

Against a `switchyard serve` on the demo catalog whose `auth` gives KEY every datasource and
RKEY fewer (e.g. only `tools`). With `--deployed`, against the stack as `sam local
start-api` serves it (no auth there): the card as the SDK resolves it, and a question
answered with a completed task that GetTask returns. The SDK speaks A2A protocol 1.0 over the JSON-RPC binding:
methods `SendMessage` / `GetTask` / ..., header `A2A-Version: 1.0`, ProtoJSON bodies
(camelCase fields, enums as `TASK_STATE_COMPLETED` / `ROLE_USER`), the card at
`/.well-known/agent-card.json` listing a `supportedInterfaces` entry with
`protocolBinding: JSONRPC` whose `url` is where the JSON-RPC requests go.

Each check prints PASS or FAIL; the script runs them all and exits non-zero if any failed.
"""

import argparse
import asyncio
import copy
import json
import sys
import uuid
from importlib.metadata import version
from typing import Any

import httpx
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError

from a2a.client import (
    A2ACardResolver,
    AuthInterceptor,
    ClientCallContext,
    ClientConfig,
    ClientFactory,
    CredentialService,
)
from a2a.types.a2a_pb2 import (
    AgentCard,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SendMessageResponse,
    Task,
    TaskState,
)
from a2a.utils.constants import (
    AGENT_CARD_WELL_KNOWN_PATH,
    PROTOCOL_VERSION_CURRENT,
    VERSION_HEADER,
    TransportProtocol,
)
from a2a.utils.errors import A2AError, InvalidParamsError, TaskNotFoundError
from a2a.utils.proto_utils import validate_proto_required_fields

# --- What the checks assume about this server: adjust here. ------------------------------

A2A_SDK_VERSION = "1.3.0"  # the version these checks were written against (a warning if not)
PROTOCOL_MAJOR = 1  # the card's JSON-RPC interface must declare protocolVersion 1.x
API_KEY_HEADER = "x-api-key"  # how Switchyard takes keys (as /v1 and /mcp do)
UNKNOWN_KEY = "not-a-key"
TIMEOUT_S = 60.0  # a first question may wait for the encoder

# Where the answer's structured data names its template: the key is searched for anywhere in
# the data parts (unsure yet whether the server nests it, e.g. under `metadata`).
TEMPLATE_ID_KEY = "template_id"

PERCENT_QUESTION = "What is 15% of 200?"
PERCENT_ANSWER_CONTAINS = "30"  # /v1 says "15% of 200 is **30**"
PERCENT_TEMPLATE = "calculator_percentage"  # None: not checked

FIRST_TURN = "How many employees work in Engineering?"
FIRST_TURN_CONTAINS = "Engineering"  # /v1 says "14 employees work in Engineering."
FOLLOW_UP = "And in Sales?"  # sent with the first task's contextId, no taskId
FOLLOW_UP_CONTAINS = "Sales"  # /v1 says "12 employees work in Sales."
HEADCOUNT_TEMPLATE = "employees_count_by_department"  # None: only "the same as the first turn"

# A question whose template's required parameter is missing (the demo golden file has /v1
# answering it `needs_clarification`: "Please give `location` (Office city)."; Seattle is not
# an allowed value). Assumed: the A2A server maps that to TASK_STATE_INPUT_REQUIRED and takes
# the next message with the same taskId as the missing value.
CLARIFY_QUESTION = "Which departments are in the Seattle office?"
CLARIFY_REPLY = "Chicago"
CLARIFIED_CONTAINS = "Chicago"  # the template answers "Departments in Chicago: ..."
CLARIFY_TEMPLATE = "departments_by_location"  # None: not checked

# A question asking two things: Switchyard splits it and runs a workflow whose id is the
# task's; the data part's `metadata.orchestration` shows its phases and checkpoints.
SPLIT_QUESTION = "How many employees work in Sales and what is 15% of 200?"
SPLIT_CONTAINS = ("Sales", "30")

UNKNOWN_METHOD = "NoSuchMethod"

# Top-level 0.3 fields a 1.0 card may carry for old clients (the SDK's own server adds them
# when it also serves 0.3); the SDK's card parser drops them, so the strict check allows them.
LEGACY_CARD_FIELDS = {
    "url",
    "preferredTransport",
    "protocolVersion",
    "additionalInterfaces",
    "security",
    "supportsAuthenticatedExtendedCard",
}

# ------------------------------------------------------------------------------------------

PREFIX = "a2a_clients"
failures: list[str] = []


def check(condition: bool, what: str) -> bool:
    if condition:
        print(f"{PREFIX}: PASS: {what}")
    else:
        print(f"{PREFIX}: FAIL: {what}", file=sys.stderr)
        failures.append(what)
    return condition


def info(what: str) -> None:
    print(f"{PREFIX}: info: {what}")


class Wire:
    """Keeps the raw JSON of each JSON-RPC exchange the SDK makes (an httpx response hook),
    so the bodies can be checked strictly, not only through the SDK's lenient parser."""

    def __init__(self) -> None:
        self.exchanges: list[tuple[dict, int, Any]] = []

    async def on_response(self, response: httpx.Response) -> None:
        request = response.request
        if request.method != "POST" or "json" not in response.headers.get("content-type", ""):
            return  # the card GET, or an SSE stream (left to the SDK)
        await response.aread()
        try:
            sent = json.loads(request.content)
            body = response.json()
        except ValueError:
            return
        if isinstance(sent, dict):
            self.exchanges.append((sent, response.status_code, body))

    def last(self, method: str) -> tuple[dict, int, Any] | None:
        for sent, status, body in reversed(self.exchanges):
            if sent.get("method") == method:
                return sent, status, body
        return None


def strict_parse(data: Any, message):
    """ProtoJSON → proto with unknown fields refused, then the spec's REQUIRED fields: the
    same validation the SDK's server applies to requests (-32602 when it fails)."""
    ParseDict(data, message)  # ParseError names an unknown field or a bad enum/type
    validate_proto_required_fields(message)  # InvalidParamsError lists missing fields
    return message


def check_strict(data: Any, message, what: str) -> bool:
    try:
        strict_parse(data, message)
    except ParseError as error:
        return check(False, f"{what} is valid ProtoJSON ({error})")
    except InvalidParamsError as error:
        return check(False, f"{what} has the spec's required fields ({error.data})")
    return check(True, f"{what} is valid ProtoJSON with every required field")


def check_envelope(wire: Wire, method: str, result_type, what: str) -> None:
    """The JSON-RPC envelope of the last `method` exchange, and its result, strictly."""
    exchange = wire.last(method)
    if not check(exchange is not None, f"{what}: the {method} response was JSON"):
        return
    sent, status, body = exchange
    ok = (
        isinstance(body, dict)
        and body.get("jsonrpc") == "2.0"
        and body.get("id") == sent.get("id")
        and ("result" in body) != ("error" in body)
    )
    check(ok, f"{what}: a JSON-RPC 2.0 response echoing the id (HTTP {status}, keys {sorted(body) if isinstance(body, dict) else body!r})")
    if isinstance(body, dict) and "result" in body:
        check_strict(body["result"], result_type(), f"{what}: the {method} result")


def parts_of(task: Task) -> list[Part]:
    return [part for artifact in task.artifacts for part in artifact.parts]


def texts_of(parts) -> str:
    return "\n".join(part.text for part in parts if part.HasField("text"))


def data_of(parts) -> list[Any]:
    return [MessageToDict(part.data) for part in parts if part.HasField("data")]


def find_key(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        if key in value:
            return value[key]
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            found = find_key(item, key)
            if found is not None:
                return found
    return None


def template_of(task: Task) -> Any:
    return find_key(data_of(parts_of(task)), TEMPLATE_ID_KEY)


def state_name(state: int) -> str:
    return TaskState.Name(state)


def user_message(text: str, context_id: str = "", task_id: str = "") -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            parts=[Part(text=text)],
            context_id=context_id,
            task_id=task_id,
        )
    )


async def send(client, text: str, context_id: str = "", task_id: str = "") -> Task:
    """One SendMessage; the server is expected to answer with a Task, not a bare Message."""
    last = None
    async for event in client.send_message(user_message(text, context_id, task_id)):
        last = event
    if last is None or not last.HasField("task"):
        got = MessageToDict(last) if last is not None else None
        raise AssertionError(f"{text!r} got no Task back ({json.dumps(got)[:300]})")
    return last.task


def check_answer(task: Task, contains: str, what: str) -> None:
    parts = parts_of(task)
    text = texts_of(parts)
    check(
        task.status.state == TaskState.TASK_STATE_COMPLETED,
        f"{what}: the task is completed ({state_name(task.status.state)})",
    )
    check(contains in text, f"{what}: the answer says {contains!r} ({text!r})")
    check(
        any(p.HasField("text") for p in parts) and any(p.HasField("data") for p in parts),
        f"{what}: the artifacts hold a text part and a data part ({[MessageToDict(p) for p in parts]})"[:400],
    )


class KeyCredentials(CredentialService):
    """Gives the key for whatever scheme the card requires (the SDK's AuthInterceptor then
    puts it where the card's securitySchemes say)."""

    def __init__(self, key: str) -> None:
        self.key = key

    async def get_credentials(self, security_scheme_name: str, context: ClientCallContext | None) -> str | None:
        return self.key


def http_client(key: str | None, wire: Wire | None = None) -> httpx.AsyncClient:
    headers = {API_KEY_HEADER: key} if key else {}
    hooks = {"response": [wire.on_response]} if wire else {}
    return httpx.AsyncClient(headers=headers, timeout=TIMEOUT_S, event_hooks=hooks)


def sdk_client(card: AgentCard, http: httpx.AsyncClient, interceptors=None, streaming: bool = False):
    # streaming=False: SendMessage (one JSON response) even when the card says it streams.
    factory = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming))
    return factory.create(card, interceptors)


async def raw_post(url: str, key: str | None, content: bytes) -> tuple[int, Any]:
    headers = {"content-type": "application/json", VERSION_HEADER: PROTOCOL_VERSION_CURRENT}
    if key:
        headers[API_KEY_HEADER] = key
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as raw:
        response = await raw.post(url, content=content, headers=headers)
    try:
        return response.status_code, response.json()
    except ValueError:
        return response.status_code, response.text


def error_code(body: Any) -> Any:
    return body.get("error", {}).get("code") if isinstance(body, dict) and isinstance(body.get("error"), dict) else None


async def run(section: str, coroutine) -> Any:
    """A section that raises is one FAIL; the others still run."""
    try:
        return await coroutine
    except Exception as error:  # noqa: BLE001 - any exception is this section failing
        check(False, f"{section} raised {type(error).__name__}: {error}")
        return None


async def deployed_card(base_url: str) -> AgentCard:
    async with http_client(None) as http:
        card = await A2ACardResolver(http, base_url).get_agent_card()
    check(bool(card.name and card.skills), f"the SDK resolves the card ({card.name!r}, {len(card.skills)} skills)")
    interfaces = [i for i in card.supported_interfaces if i.protocol_binding == TransportProtocol.JSONRPC]
    check(bool(interfaces), f"the card offers a JSONRPC interface ({[i.url for i in interfaces]})")
    return card


async def deployed(base_url: str) -> int:
    """The card and one answered question through the deployed path."""
    card = await run("the agent card", deployed_card(base_url))
    if card is not None:
        wire = Wire()
        async with http_client(None, wire) as http:
            await run("the answer", answer_checks(sdk_client(card, http), wire))
    if failures:
        print(f"{PREFIX}: {len(failures)} check(s) FAILED", file=sys.stderr)
        return 1
    print(f"{PREFIX}: all checks passed")
    return 0


async def card_checks(base_url: str, key: str, restricted_key: str) -> tuple[AgentCard, str] | None:
    async with http_client(key) as http:
        raw = await http.get(base_url.rstrip("/") + AGENT_CARD_WELL_KNOWN_PATH)
        check(raw.status_code == 200, f"GET {AGENT_CARD_WELL_KNOWN_PATH} with the key answers 200 ({raw.status_code})")
        document = raw.json()
        strict = {k: v for k, v in copy.deepcopy(document).items() if k not in LEGACY_CARD_FIELDS}
        check_strict(strict, AgentCard(), "the agent card")
        card = await A2ACardResolver(http, base_url).get_agent_card()
    check(bool(card.name and card.description and card.version), f"the SDK resolves the card ({card.name!r} {card.version!r})")
    interfaces = [i for i in card.supported_interfaces if i.protocol_binding == TransportProtocol.JSONRPC]
    jsonrpc = next(iter(interfaces), None)
    if not check(jsonrpc is not None, f"the card offers a JSONRPC interface ({MessageToDict(card)['supportedInterfaces']})"):
        return None
    check(
        jsonrpc.protocol_version.split(".")[0] == str(PROTOCOL_MAJOR),
        f"the JSONRPC interface speaks protocol {PROTOCOL_MAJOR}.x ({jsonrpc.protocol_version!r})",
    )
    info(f"JSON-RPC endpoint {jsonrpc.url}")
    schemes = {
        name: scheme.api_key_security_scheme
        for name, scheme in card.security_schemes.items()
        if scheme.HasField("api_key_security_scheme")
    }
    check(
        any(s.location.lower() == "header" and s.name.lower() == API_KEY_HEADER for s in schemes.values())
        and any(set(r.schemes) & set(schemes) for r in card.security_requirements),
        f"the card requires an API key in the {API_KEY_HEADER} header ({MessageToDict(card).get('securitySchemes')}, "
        f"{MessageToDict(card).get('securityRequirements')})",
    )
    skills = [s.id for s in card.skills]
    check(bool(skills), f"the card lists skills ({skills})")

    async with http_client(restricted_key) as http:
        narrow = await A2ACardResolver(http, base_url).get_agent_card()
    fewer = [s.id for s in narrow.skills]
    check(
        0 < len(fewer) < len(skills) and set(fewer) <= set(skills),
        f"the restricted key's card lists fewer skills ({fewer} of {skills})",
    )
    return card, jsonrpc.url


async def answer_checks(client, wire: Wire) -> None:
    task = await send(client, PERCENT_QUESTION)
    check_answer(task, PERCENT_ANSWER_CONTAINS, PERCENT_QUESTION)
    if PERCENT_TEMPLATE is not None:
        check(template_of(task) == PERCENT_TEMPLATE, f"the data part names {PERCENT_TEMPLATE} ({template_of(task)!r})")
    check(bool(task.id and task.context_id), f"the task has an id and a contextId ({task.id!r}, {task.context_id!r})")
    check_envelope(wire, "SendMessage", SendMessageResponse, "SendMessage")

    fetched = await client.get_task(GetTaskRequest(id=task.id))
    check(
        fetched.id == task.id
        and fetched.status.state == TaskState.TASK_STATE_COMPLETED
        and list(fetched.artifacts) == list(task.artifacts),
        f"GetTask returns the same completed task ({state_name(fetched.status.state)})",
    )
    check_envelope(wire, "GetTask", Task, "GetTask")

    try:
        await client.get_task(GetTaskRequest(id=str(uuid.uuid4())))
        check(False, "GetTask of an unknown id is refused")
    except TaskNotFoundError as error:
        check(True, f"GetTask of an unknown id is TaskNotFoundError, -32001 ({error})")
    except A2AError as error:
        check(False, f"GetTask of an unknown id is TaskNotFoundError, -32001 (got {error!r})")


async def context_checks(client) -> None:
    first = await send(client, FIRST_TURN)
    check_answer(first, FIRST_TURN_CONTAINS, FIRST_TURN)
    second = await send(client, FOLLOW_UP, context_id=first.context_id)
    check_answer(second, FOLLOW_UP_CONTAINS, f"{FOLLOW_UP} (same contextId)")
    check(
        second.context_id == first.context_id and second.id != first.id,
        f"the follow-up is a new task in the same context ({first.id} → {second.id}, context {second.context_id})",
    )
    first_template, second_template = template_of(first), template_of(second)
    check(
        first_template is not None
        and first_template == second_template
        and (HEADCOUNT_TEMPLATE is None or second_template == HEADCOUNT_TEMPLATE),
        f"the follow-up uses the first turn's template ({first_template!r}, {second_template!r})",
    )


async def clarify_checks(client) -> None:
    asked = await send(client, CLARIFY_QUESTION)
    question = texts_of(asked.status.message.parts)
    check(
        asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED and bool(question),
        f"{CLARIFY_QUESTION!r} is input-required with a question ({state_name(asked.status.state)}: {question!r})",
    )
    answered = await send(client, CLARIFY_REPLY, context_id=asked.context_id, task_id=asked.id)
    check(answered.id == asked.id, f"the reply continues the same task ({asked.id} → {answered.id})")
    check_answer(answered, CLARIFIED_CONTAINS, f"the reply {CLARIFY_REPLY!r}")
    if CLARIFY_TEMPLATE is not None:
        check(template_of(answered) == CLARIFY_TEMPLATE, f"the data part names {CLARIFY_TEMPLATE} ({template_of(answered)!r})")


async def split_checks(client) -> None:
    task = await send(client, SPLIT_QUESTION)
    for contains in SPLIT_CONTAINS:
        check_answer(task, contains, SPLIT_QUESTION)
    orchestration = None
    for data in data_of(parts_of(task)):
        if isinstance(data, dict):
            orchestration = (data.get("metadata") or {}).get("orchestration") or orchestration
    check(
        isinstance(orchestration, dict)
        and orchestration.get("workflow_id") == task.id
        and len(orchestration.get("sub_questions") or []) >= 2
        and bool(orchestration.get("phases")),
        f"the split question's workflow is the task, with its sub-questions and phases ({json.dumps(orchestration)[:300]})",
    )
    fetched = await client.get_task(GetTaskRequest(id=task.id))
    check(
        fetched.status.state == TaskState.TASK_STATE_COMPLETED and list(fetched.artifacts) == list(task.artifacts),
        f"GetTask shows the split question's task completed ({state_name(fetched.status.state)})",
    )


async def streaming_checks(card: AgentCard, key: str) -> None:
    if not card.capabilities.streaming:
        info("the card does not declare capabilities.streaming: SendStreamingMessage not checked")
        return
    async with http_client(key) as http:
        client = sdk_client(card, http, streaming=True)
        events, task_id, state, parts = [], "", TaskState.TASK_STATE_UNSPECIFIED, []
        async for event in client.send_message(user_message(PERCENT_QUESTION)):
            kind = event.WhichOneof("payload")
            events.append(kind)
            if kind == "task":
                task_id, state = event.task.id, event.task.status.state
                parts.extend(parts_of(event.task))
            elif kind == "status_update":
                task_id, state = event.status_update.task_id, event.status_update.status.state
            elif kind == "artifact_update":
                parts.extend(event.artifact_update.artifact.parts)
        check(
            state == TaskState.TASK_STATE_COMPLETED and PERCENT_ANSWER_CONTAINS in texts_of(parts),
            f"SendStreamingMessage streams to completed ({events}, {texts_of(parts)!r})",
        )
        if task_id:
            fetched = await client.get_task(GetTaskRequest(id=task_id))
            check(fetched.status.state == TaskState.TASK_STATE_COMPLETED, "the streamed task is then GetTask-able")


async def refusal_checks(card: AgentCard, url: str, key: str) -> None:
    # An unknown or missing key: HTTP 401/403, or at least a JSON-RPC error, never an answer.
    request = json.dumps(
        {"jsonrpc": "2.0", "id": "auth-1", "method": "SendMessage",
         "params": MessageToDict(user_message(PERCENT_QUESTION))}
    ).encode()
    for who, bad_key in [("an unknown key", UNKNOWN_KEY), ("no key", None)]:
        status, body = await raw_post(url, bad_key, request)
        refused = status in (401, 403) or (isinstance(body, dict) and "error" in body and "result" not in body)
        check(refused and "result" not in (body if isinstance(body, dict) else {}),
              f"{who} is refused ({status}: {json.dumps(body)[:200] if not isinstance(body, str) else body[:200]!r})")
    async with http_client(UNKNOWN_KEY) as http:
        client = sdk_client(card, http)
        try:
            task = await send(client, PERCENT_QUESTION)
            check(False, f"the SDK client with an unknown key gets an error, not a task ({state_name(task.status.state)})")
        except A2AError as error:  # A2AClientError "HTTP Error 401: ..." or a mapped JSON-RPC error
            check(True, f"the SDK client with an unknown key gets an error ({type(error).__name__}: {str(error).splitlines()[0][:120]})")

    status, body = await raw_post(url, key, b"{not json")
    check(
        error_code(body) == -32700 and isinstance(body, dict) and body.get("id") is None,
        f"malformed JSON is a JSON-RPC parse error, -32700 with id null ({status}: {body})",
    )
    status, body = await raw_post(
        url, key, json.dumps({"jsonrpc": "2.0", "id": "m-1", "method": UNKNOWN_METHOD, "params": {}}).encode()
    )
    check(
        error_code(body) == -32601 and body.get("id") == "m-1",
        f"an unknown method is -32601, echoing the id ({status}: {body})",
    )
    no_message_id = {"message": {"role": "ROLE_USER", "parts": [{"text": PERCENT_QUESTION}]}}
    status, body = await raw_post(
        url, key, json.dumps({"jsonrpc": "2.0", "id": "p-1", "method": "SendMessage", "params": no_message_id}).encode()
    )
    check(error_code(body) == -32602, f"a message without messageId is -32602 invalid params ({status}: {body})")

    # No A2A-Version header means 0.3 (the specification's rule), whose wire differs.
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as raw:
        response = await raw.post(
            url,
            headers={"content-type": "application/json", API_KEY_HEADER: key},
            content=json.dumps({"jsonrpc": "2.0", "id": "v-1", "method": "GetTask", "params": {"id": "x"}}),
        )
    body = response.json()
    check(error_code(body) == -32009, f"a request without A2A-Version is -32009 version not supported ({body})")


async def restricted_checks(card: AgentCard, restricted_key: str) -> None:
    # The restricted key may use `tools` only: a headcount question is not answered from `hr`.
    async with http_client(restricted_key) as http:
        task = await send(sdk_client(card, http), FIRST_TURN)
    datasources = {find_key(d, "selected_adapter") for d in data_of(parts_of(task))}
    check(
        task.status.state != TaskState.TASK_STATE_COMPLETED or "hr" not in datasources,
        f"the restricted key's {FIRST_TURN!r} is not answered from hr ({state_name(task.status.state)}, {datasources})",
    )
    async with http_client(restricted_key) as http:
        task = await send(sdk_client(card, http), PERCENT_QUESTION)
    check_answer(task, PERCENT_ANSWER_CONTAINS, f"the restricted key's {PERCENT_QUESTION!r}")


async def interceptor_check(card: AgentCard, key: str) -> None:
    # No key header on the client: the SDK's AuthInterceptor adds it from the card's
    # securitySchemes, as a generic A2A client would.
    async with http_client(None) as http:
        client = sdk_client(card, http, interceptors=[AuthInterceptor(KeyCredentials(key))])
        task = await send(client, PERCENT_QUESTION)
        check(
            task.status.state == TaskState.TASK_STATE_COMPLETED,
            f"the SDK's AuthInterceptor authenticates from the card alone ({state_name(task.status.state)})",
        )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="where the card is: BASE/.well-known/agent-card.json")
    parser.add_argument("--key", help="a key with every datasource")
    parser.add_argument("--restricted-key", help="a key with fewer datasources")
    parser.add_argument("--deployed", action="store_true", help="no auth: the card and one answer only")
    args = parser.parse_args()
    if args.deployed:
        return await deployed(args.base_url)
    if not (args.key and args.restricted_key):
        parser.error("--key and --restricted-key are required without --deployed")

    installed = version("a2a-sdk")
    if installed != A2A_SDK_VERSION:
        info(f"a2a-sdk {installed} installed; these checks were written against {A2A_SDK_VERSION}")

    resolved = await run("the agent card", card_checks(args.base_url, args.key, args.restricted_key))
    if not resolved:
        check(False, "no usable agent card: the other checks need it")
        return 1
    card, url = resolved

    wire = Wire()
    async with http_client(args.key, wire) as http:
        client = sdk_client(card, http)
        await run("the answer", answer_checks(client, wire))
        await run("the follow-up in a context", context_checks(client))
        await run("the clarification", clarify_checks(client))
        await run("the split question", split_checks(client))
    await run("streaming", streaming_checks(card, args.key))
    await run("the refusals", refusal_checks(card, url, args.key))
    await run("the restricted key", restricted_checks(card, args.restricted_key))
    await run("the AuthInterceptor", interceptor_check(card, args.key))

    async with http_client(args.key) as http:
        final = await run("the last question", send(sdk_client(card, http), PERCENT_QUESTION))
    if final is not None:
        check(
            final.status.state == TaskState.TASK_STATE_COMPLETED and PERCENT_ANSWER_CONTAINS in texts_of(parts_of(final)),
            "after all that the server still answers",
        )

    if failures:
        print(f"{PREFIX}: {len(failures)} check(s) FAILED", file=sys.stderr)
        return 1
    print(f"{PREFIX}: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
