#!/usr/bin/env python3
"""Checks of Switchyard's OpenAI-compatible endpoints with the official OpenAI client.

Usage: chat_clients.py BASE_URL                        (e.g. http://127.0.0.1:8080/v1)
       chat_clients.py BASE_URL --restricted TOOLS_KEY  (a server with auth; the key may use
                                                        only `tools`)
Run by chat-clients.sh.
"""

import sys

import openai
from openai import OpenAI


def check(condition: bool, what: str) -> None:
    if not condition:
        print(f"chat_clients: FAILED: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"chat_clients: ok: {what}")


def main() -> None:
    client = OpenAI(base_url=sys.argv[1], api_key="unused-without-auth", max_retries=0)

    models = [m.id for m in client.models.list()]
    check(models == ["switchyard"], f"GET /v1/models lists switchyard ({models})")

    answer = client.chat.completions.create(
        model="switchyard",
        messages=[{"role": "user", "content": "What is 15% of 200?"}],
    )
    message = answer.choices[0].message
    check(message.role == "assistant" and message.content == "15% of 200 is **30**", f"an answer ({message.content!r})")
    metadata = answer.model_extra["switchyard"]["metadata"]
    check(metadata["template_id"] == "calculator_percentage", "the routing metadata in `switchyard`")

    stream = client.chat.completions.create(
        model="switchyard",
        messages=[{"role": "user", "content": [{"type": "text", "text": "How many employees work in Engineering?"}]}],
        stream=True,
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    check(text == "14 employees work in Engineering.", f"a streamed answer ({text!r})")

    offer = client.chat.completions.create(
        model="switchyard",
        messages=[
            {"role": "user", "content": "What is 15% of 200?"},
            {"role": "assistant", "content": "15% of 200 is 30. Would you like the headcount of Sales too?"},
            {"role": "user", "content": "yes please"},
        ],
    )
    said = offer.model_extra["switchyard"]["metadata"]
    check(
        said["composite_routing"]["selected_adapter"] == "hr" and "Sales" in offer.choices[0].message.content,
        f"an accepted offer in `messages` ({offer.choices[0].message.content!r})",
    )

    history = client.chat.completions.create(
        model="switchyard",
        messages=[
            {"role": "user", "content": "How many employees work in Engineering?"},
            {"role": "assistant", "content": "14 employees work in Engineering."},
            {"role": "user", "content": "And in Sales?"},
        ],
    )
    said = history.choices[0].message.content
    check(said == "12 employees work in Sales.", f"a two-turn history without session_id answers for Sales ({said!r})")

    for messages, what in [
        ([{"role": "user", "content": "x" * 5000}], "an over-long message"),
        ([{"role": "user", "content": 42}], "a non-string content"),
        ([{"role": "system", "content": "be brief"}], "no user message"),
    ]:
        try:
            client.chat.completions.create(model="switchyard", messages=messages)
            check(False, f"{what} is refused")
        except openai.BadRequestError as error:
            body = error.body or {}
            check(error.status_code == 400 and body.get("param") == "messages", f"{what}: 400 naming messages ({body.get('message')!r})")

    try:
        client.chat.completions.create(model="switchyard", messages=[{"role": "assistant", "content": "Hello"}])
        check(False, "a chat ending with the assistant's message is refused")
    except openai.BadRequestError as error:
        body = error.body or {}
        check(error.status_code == 400 and body.get("param") == "messages", f"400 naming messages ({body})")


def restricted(base_url: str, tools_key: str) -> None:
    """A caller restricted to `tools` reaches the calculator, not `hr`; arithmetic the
    calculator cannot read exactly is refused saying why."""
    client = OpenAI(base_url=base_url, api_key="unused", default_headers={"x-api-key": tools_key}, max_retries=0)
    answer = client.chat.completions.create(
        model="switchyard", messages=[{"role": "user", "content": "What is 15% of 200?"}]
    )
    check(answer.choices[0].message.content == "15% of 200 is **30**", "the restricted caller reaches tools")
    answer = client.chat.completions.create(
        model="switchyard", messages=[{"role": "user", "content": "How many employees work in Engineering?"}]
    )
    said = answer.choices[0].message.content
    selected = answer.model_extra["switchyard"].get("metadata", {}).get("composite_routing", {}).get("selected_adapter")
    check(selected != "hr" and "14 employees" not in said, f"and cannot reach hr ({said!r})")
    try:
        answer = client.chat.completions.create(
            model="switchyard", messages=[{"role": "user", "content": "What is 10**1000000 of 2?"}]
        )
        said = answer.choices[0].message.content
    except openai.APIStatusError as error:
        said = str(error.body)
    check("does not have" in said and " = " not in said, f"a power is refused saying why, not multiplied ({said!r})")
    answer = client.chat.completions.create(
        model="switchyard", messages=[{"role": "user", "content": "What is 1e308 * 1e308?"}]
    )
    said = answer.choices[0].message.content
    check("overflow" in said and " = " not in said, f"an overflow is named, not answered ({said!r})")
    try:
        OpenAI(base_url=base_url, api_key="unused", default_headers={"x-api-key": "not-a-key"}, max_retries=0).models.list()
        check(False, "an unknown caller is refused")
    except openai.AuthenticationError as error:
        check(error.status_code == 401, "an unknown caller gets 401")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[2] == "--restricted":
        restricted(sys.argv[1], sys.argv[3])
    else:
        main()
