"""The API as `sam local start-api` serves it, checked against the OpenAPI document:
   sam_api_check.py BASE_URL OPENAPI_JSON
GET /v1/openapi.json must be the committed document; /v1/health, /v1/route and
/v1/query (an answered question, a refused one) must answer with a status the document
lists for the operation and a body valid against that response's schema; the A2A agent's
card and `POST /a2a` (outside the document) must answer through the API too. Exits 1 naming
the first request that does not."""

import json
import sys
import time
import urllib.error
import urllib.request

import jsonschema
import referencing
import referencing.jsonschema


def call(base, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        request.add_header("content-type", "application/json")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    return status, json.loads(raw), (time.monotonic() - started) * 1000


def main():
    base, document = sys.argv[1], sys.argv[2]
    with open(document) as f:
        spec = json.load(f)
    resource = referencing.Resource.from_contents(spec, default_specification=referencing.jsonschema.DRAFT202012)
    registry = referencing.Registry().with_resource("urn:openapi", resource)

    def check(method, path, body, want_status, want=lambda b: True):
        status, answer, ms = call(base, method, path, body)
        where = f"{method} {path}"
        if status != want_status:
            sys.exit(f"sam_api_check: {where}: status {status}, wanted {want_status}: {answer}")
        responses = spec["paths"][path][method.lower()]["responses"]
        if str(status) not in responses:
            sys.exit(f"sam_api_check: {where}: status {status} is not in the document")
        schema = responses[str(status)].get("content", {}).get("application/json", {}).get("schema")
        if schema is not None:
            ref = schema.get("$ref", "")
            validator = jsonschema.Draft202012Validator(
                {"$ref": "urn:openapi" + ref} if ref.startswith("#") else schema, registry=registry
            )
            errors = sorted(validator.iter_errors(answer), key=lambda e: list(e.path))
            if errors:
                sys.exit(f"sam_api_check: {where}: body does not match {ref or 'its schema'}: {errors[0].message}")
        if not want(answer):
            sys.exit(f"sam_api_check: {where}: unexpected answer {json.dumps(answer)[:400]}")
        print(f"sam_api_check: {where} -> {status} in {ms:.0f} ms: {json.dumps(answer)[:160]}")
        return answer

    status, served, _ = call(base, "GET", "/v1/openapi.json")
    if status != 200 or served != spec:
        sys.exit(f"sam_api_check: GET /v1/openapi.json: status {status}, and not the committed {document}")
    print(f"sam_api_check: GET /v1/openapi.json -> 200, the committed {document}")
    check("GET", "/v1/health", None, 200, lambda b: b["templates"] > 0)
    check("POST", "/v1/route", {"query": "What is 15% of 200?"}, 200,
          lambda b: "calculator_percentage" in json.dumps(b["routing_decision"]))
    check("POST", "/v1/query", {"query": "How many employees work in Engineering?", "session_id": "sam-1"}, 200,
          lambda b: b["content"] == "14 employees work in Engineering.")
    # The session lives in the warm container: the follow-up is read in its context.
    check("POST", "/v1/query", {"query": "And in Sales?", "session_id": "sam-1"}, 200,
          lambda b: "Sales" in b["content"])
    check("POST", "/v1/query", {"query": ""}, 400, lambda b: "query" in json.dumps(b))
    a2a(base)
    print("sam_api_check: passed")


def a2a(base):
    """The A2A agent through the API: its card, and a question answered as a completed task."""
    for path in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
        status, card, ms = call(base, "GET", path)
        urls = [i.get("url", "") for i in card.get("supportedInterfaces", [])] if status == 200 else []
        if status != 200 or not any(u.endswith("/a2a") for u in urls):
            sys.exit(f"sam_api_check: GET {path}: status {status}, wanted a card naming /a2a: {json.dumps(card)[:400]}")
        print(f"sam_api_check: GET {path} -> 200 in {ms:.0f} ms: {len(card.get('skills', []))} skills, endpoint {urls[0]}")
    message = {"messageId": "sam-a2a-1", "contextId": "sam-a2a", "role": "ROLE_USER",
               "parts": [{"text": "What is 15% of 200?"}]}
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    data = json.dumps(body).encode()
    request = urllib.request.Request(base + "/a2a", data=data, method="POST")
    request.add_header("content-type", "application/json")
    request.add_header("A2A-Version", "1.0")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            status, answer = response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        status, answer = error.code, error.read()
    ms = (time.monotonic() - started) * 1000
    task = answer.get("result", {}).get("task", {}) if status == 200 else {}
    state = task.get("status", {}).get("state")
    texts = [p.get("text", "") for a in task.get("artifacts", []) for p in a.get("parts", [])]
    if state != "TASK_STATE_COMPLETED" or not any("30" in t for t in texts):
        sys.exit(f"sam_api_check: POST /a2a: status {status}, wanted a completed task saying 30: {str(answer)[:400]}")
    print(f"sam_api_check: POST /a2a -> {state} in {ms:.0f} ms: {texts[0][:120]}")


if __name__ == "__main__":
    main()
