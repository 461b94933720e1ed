#!/usr/bin/env python3
"""Replay labelled conversations against a running `switchyard serve`, on each surface, and
print the turn accuracy per surface: all turns, first turns, later turns, and per `kind`.

Usage:
  . infra/scripts/venv.sh && venv_ensure
  "$SWITCHYARD_VENV/bin/python" infra/scripts/replay_sessions.py \
      [--base-url http://127.0.0.1:$PORT] [--data tests/data/demo/sessions.jsonl] \
      [--surfaces alone,query,chat,a2a] [--json out.json] [--show-errors] \
      [--min-all 0.8] [--min-later-vs-alone 0.0]

The data is JSON lines, one turn a line, in conversation order:
  {"session_id": "u01", "text": "...", "intent": "<template id>|oos|ack", "domain": "<datasource>",
   "kind": "first|follow_up|switch|return|clarification|same|acknowledgement"}

Surfaces:
  alone  POST /v1/query {"query": text}: every turn on its own (the baseline).
  query  POST /v1/query {"query": text, "session_id": <one per conversation and run>}.
  chat   POST /v1/chat/completions with the whole history (openai client, no session_id);
         the routing is the answer's extra field `switchyard`.
  a2a    A2A SendMessage (a2a-sdk client), one contextId per conversation; after an
         input-required task the next message also carries its taskId.

A turn is right when the answer executed (or asked for a missing parameter of) the labelled
datasource and template; an "oos" turn is right when the answer is `no_match`; an "ack" turn
("thanks", "ok great") is right when nothing ran: `acknowledged`, or `no_match` alone. A `clarify`
answer (which template did you mean?) and a split question's answer count as wrong.

Exits 1 when --min-all or --min-later-vs-alone is given and a session surface (query, chat,
a2a) misses it; 2 when a surface could not run at all. Needs httpx, openai and a2a-sdk
(infra/scripts/chat-clients.sh installs them into the project's virtualenv).
"""

import argparse
import asyncio
import json
import os
import sys
import uuid
from collections import defaultdict

import httpx

KINDS = ["first", "follow_up", "switch", "return", "clarification", "same", "acknowledgement"]
COLUMNS = ["all", "first", "later"] + KINDS[1:]
SURFACES = ["alone", "query", "chat", "a2a"]
SESSION_SURFACES = ["query", "chat", "a2a"]
TIMEOUT_S = 120.0  # a first question may wait for the encoder


def load(path):
    """The conversations, in file order: [(session_id, [turn, ...]), ...]."""
    sessions = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            turn = json.loads(line)
            for key in ("session_id", "text", "intent"):
                if key not in turn:
                    sys.exit(f"{path}:{number}: no `{key}`")
            turn.setdefault("kind", "first" if turn["session_id"] not in sessions else "follow_up")
            sessions.setdefault(turn["session_id"], []).append(turn)
    return list(sessions.items())


def routing_of(answer):
    """What an answer (a /v1/query body) did: (status, datasource, template_id, context.used)."""
    if not isinstance(answer, dict):
        return "error", None, None, None
    status = answer.get("status") or "?"
    metadata = answer.get("metadata") or {}
    used = (((metadata.get("session") or {}).get("context")) or {}).get("used")
    routing = metadata.get("composite_routing") or {}
    if metadata.get("source") == "orchestration":
        subs = (metadata.get("orchestration") or {}).get("sub_questions") or []
        split = "+".join(f"{s.get('datasource')}/{s.get('template_id')}" for s in subs)
        return "split", None, split, used
    template = metadata.get("template_id") or routing.get("template_id")
    return status, routing.get("selected_adapter"), template, used


def judge(turn, routed):
    status, datasource, template, _ = routed
    if turn["intent"] == "oos":
        return status == "no_match"
    if turn["intent"] == "ack":
        return status in ("acknowledged", "no_match")
    if status in ("no_match", "clarify", "split", "error"):
        return False
    return datasource == turn.get("domain") and template == turn["intent"]


def describe(routed):
    status, datasource, template, _ = routed
    if status in ("no_match", "acknowledged"):
        return status
    if status == "split":
        return f"split({template})"
    if status == "clarify":
        return f"clarify(best {datasource}/{template})"
    if status == "error" and template is None:
        return "error"
    suffix = "" if status == "ok" else f" [{status}]"
    return f"{datasource}/{template}{suffix}"


# --- surfaces: each takes one conversation's turns and returns one answer dict per turn ---


def run_alone(http, base, run_id, sid, turns):
    return [post_query(http, base, {"query": t["text"]}) for t in turns]


def run_query(http, base, run_id, sid, turns):
    session = f"replay-{run_id}-{sid}"
    return [post_query(http, base, {"query": t["text"], "session_id": session}) for t in turns]


def post_query(http, base, body):
    response = http.post(f"{base}/v1/query", json=body)
    try:
        return response.json()
    except ValueError:
        return {"status": "error", "content": f"HTTP {response.status_code}: {response.text[:200]}"}


def make_chat(base):
    from openai import OpenAI

    client = OpenAI(base_url=base + "/v1", api_key="unused", timeout=TIMEOUT_S, max_retries=0)

    def run_chat(http, base_, run_id, sid, turns):
        messages, answers = [], []
        for t in turns:
            messages.append({"role": "user", "content": t["text"]})
            try:
                response = client.chat.completions.create(model="switchyard", messages=messages)
            except Exception as error:  # noqa: BLE001 - a failed turn is a wrong turn
                answers.append({"status": "error", "content": str(error)[:300]})
                messages.append({"role": "assistant", "content": "(error)"})
                continue
            extra = response.model_extra or {}
            answers.append(extra.get("switchyard") or response.to_dict().get("switchyard"))
            messages.append({"role": "assistant", "content": response.choices[0].message.content or ""})
        return answers

    return run_chat


class A2A:
    """The a2a-sdk client, as infra/scripts/a2a_clients.py uses it (SendMessage, no stream)."""

    def __init__(self, base):
        self.base = base
        self.loop = asyncio.new_event_loop()
        self.http = httpx.AsyncClient(timeout=TIMEOUT_S)
        self.client = self.loop.run_until_complete(self._client())

    async def _client(self):
        from a2a.client import A2ACardResolver, ClientConfig, ClientFactory

        card = await A2ACardResolver(self.http, self.base).get_agent_card()
        return ClientFactory(ClientConfig(httpx_client=self.http, streaming=False)).create(card)

    def close(self):
        self.loop.run_until_complete(self.http.aclose())
        self.loop.close()

    def __call__(self, http, base, run_id, sid, turns):
        return self.loop.run_until_complete(self._conversation(turns))

    async def _conversation(self, turns):
        from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, TaskState

        context_id, task_id, answers = str(uuid.uuid4()), "", []
        for t in turns:
            request = SendMessageRequest(
                message=Message(
                    role=Role.ROLE_USER,
                    message_id=str(uuid.uuid4()),
                    parts=[Part(text=t["text"])],
                    context_id=context_id,
                    task_id=task_id,
                )
            )
            task_id = ""
            try:
                last = None
                async for event in self.client.send_message(request):
                    last = event
            except Exception as error:  # noqa: BLE001 - a failed turn is a wrong turn
                answers.append({"status": "error", "content": str(error)[:300]})
                continue
            if last is None or not last.HasField("task"):
                answers.append({"status": "error", "content": "no Task in the answer"})
                continue
            task = last.task
            if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
                task_id = task.id  # the next message answers this task's question
            answers.append(task_answer(task))
        return answers


def task_answer(task):
    """The /v1/query-shaped answer in a task's data parts (artifacts, or the status message)."""
    from google.protobuf.json_format import MessageToDict

    parts = [p for a in task.artifacts for p in a.parts] + list(task.status.message.parts)
    data = [MessageToDict(p.data) for p in parts if p.HasField("data")]
    for d in data:
        if isinstance(d, dict) and "status" in d:
            return d
    found = find_key(data, "template_id")  # as a2a_clients.py finds it, anywhere in the data
    return {"status": "error" if found is None else "ok", "metadata": {"template_id": found},
            "content": "no answer data in the task"}


def find_key(value, key):
    if isinstance(value, dict):
        if value.get(key) is not None:
            return value[key]
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            found = find_key(item, key)
            if found is not None:
                return found
    return None


# --- scoring and output ---


def score(sessions, answers_by_session):
    """Per column: [right, n]; and the wrong turns."""
    counts = {c: [0, 0] for c in COLUMNS}
    wrong = []
    for sid, turns in sessions:
        for position, (turn, answer) in enumerate(zip(turns, answers_by_session[sid])):
            routed = routing_of(answer)
            right = judge(turn, routed)
            columns = ["all", "first" if position == 0 else "later"]
            if turn["kind"] != "first":
                columns.append(turn["kind"])
            for c in columns:
                counts.setdefault(c, [0, 0])
                counts[c][0] += right
                counts[c][1] += 1
            if not right:
                bare = turn["intent"] in ("oos", "ack")
                expected = turn["intent"] if bare else f"{turn.get('domain')}/{turn['intent']}"
                wrong.append({"session": sid, "turn": position + 1, "kind": turn["kind"],
                              "text": turn["text"], "expected": expected, "got": describe(routed),
                              "used": routed[3]})
    return counts, wrong


def accuracy(cell):
    right, n = cell
    return right / n if n else None


def table(results):
    width = 16
    lines = ["surface  " + "".join(c.rjust(width) for c in COLUMNS)]
    for surface, (counts, _) in results.items():
        cells = []
        for c in COLUMNS:
            right, n = counts.get(c, [0, 0])
            cells.append((f"{100 * right / n:.1f}% ({right}/{n})" if n else "-").rjust(width))
        lines.append(surface.ljust(9) + "".join(cells))
    return "\n".join(lines)


def thresholds(results, min_all, min_later_vs_alone):
    problems = []
    alone_later = accuracy(results["alone"][0]["later"]) if "alone" in results else None
    for surface in SESSION_SURFACES:
        if surface not in results:
            continue
        counts = results[surface][0]
        every, later = accuracy(counts["all"]), accuracy(counts["later"])
        if min_all is not None and every is not None and every < min_all:
            problems.append(f"{surface}: all-turn accuracy {every:.3f} is below --min-all {min_all}")
        if min_later_vs_alone is not None and later is not None and alone_later is not None:
            if later < alone_later - min_later_vs_alone:
                problems.append(f"{surface}: later-turn accuracy {later:.3f} is below alone's "
                                f"{alone_later:.3f} minus {min_later_vs_alone}")
    return problems


def main():
    port = os.environ.get("PORT", "8080")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default=f"http://127.0.0.1:{port}", help="default http://127.0.0.1:$PORT")
    parser.add_argument("--data", default="tests/data/demo/sessions.jsonl")
    parser.add_argument("--surfaces", default=",".join(SURFACES), help="comma-separated: " + ",".join(SURFACES))
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--min-all", type=float, help="least all-turn accuracy of a session surface")
    parser.add_argument("--min-later-vs-alone", type=float,
                        help="most a session surface's later-turn accuracy may fall below alone's")
    parser.add_argument("--show-errors", action="store_true", help="print every wrong turn")
    args = parser.parse_args()
    surfaces = [s.strip() for s in args.surfaces.split(",") if s.strip()]
    unknown = set(surfaces) - set(SURFACES)
    if unknown:
        parser.error(f"unknown surfaces {sorted(unknown)}; known: {SURFACES}")
    if args.min_later_vs_alone is not None and "alone" not in surfaces:
        parser.error("--min-later-vs-alone needs the alone surface")
    base = args.base_url.rstrip("/")
    sessions = load(args.data)
    run_id = uuid.uuid4().hex[:8]
    print(f"replay: {len(sessions)} conversations, {sum(len(t) for _, t in sessions)} turns, {base}, run {run_id}")

    results, failed = {}, []
    with httpx.Client(timeout=TIMEOUT_S) as http:
        for surface in surfaces:
            closer = None
            try:
                if surface == "chat":
                    runner = make_chat(base)
                elif surface == "a2a":
                    runner = closer = A2A(base)
                else:
                    runner = {"alone": run_alone, "query": run_query}[surface]
                answers = {sid: runner(http, base, run_id, sid, turns) for sid, turns in sessions}
            except Exception as error:  # noqa: BLE001 - report and go on with the next surface
                print(f"replay: {surface} could not run: {type(error).__name__}: {error}", file=sys.stderr)
                failed.append(surface)
                continue
            finally:
                if closer is not None:
                    closer.close()
            results[surface] = score(sessions, answers)

    print(table(results))
    if args.show_errors:
        for surface, (_, wrong) in results.items():
            for w in wrong:
                used = f"  used={w['used']}" if w["used"] else ""
                print(f"wrong {surface} {w['session']}#{w['turn']} {w['kind']}: {w['text']!r}  "
                      f"expected {w['expected']}  got {w['got']}{used}")
    if args.json:
        out = {"base_url": base, "data": args.data, "run": run_id, "failed_surfaces": failed,
               "surfaces": {s: {"accuracy": {c: {"right": counts.get(c, [0, 0])[0], "n": counts.get(c, [0, 0])[1],
                                                  "accuracy": accuracy(counts.get(c, [0, 0]))} for c in COLUMNS},
                                "wrong": wrong}
                            for s, (counts, wrong) in results.items()}}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=2)
    problems = thresholds(results, args.min_all, args.min_later_vs_alone)
    for p in problems:
        print(f"replay: FAIL: {p}", file=sys.stderr)
    if failed:
        return 2
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
