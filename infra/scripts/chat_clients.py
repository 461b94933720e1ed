#!/usr/bin/env python3
"""Checks of Switchyard's OpenAI-compatible endpoints with the official OpenAI client.

Usage: chat_clients.py BASE_URL   (e.g. http://127.0.0.1:8080/v1; run by chat-clients.sh)
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

    try:
        client.chat.completions.create(model="switchyard", messages=[{"role": "assistant", "content": "Hello"}])
        check(False, "a chat ending with the assistant's message is refused")
    except openai.BadRequestError as error:
        body = error.body or {}
        check(error.status_code == 400 and body.get("param") == "messages", f"400 naming messages ({body})")


if __name__ == "__main__":
    main()
