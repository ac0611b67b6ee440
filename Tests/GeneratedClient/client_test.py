"""The API through a client generated from the served document, as a Python user would use it.

Started by GeneratedClientTests (Tests/SenderTests), which generates the client with the pinned
openapi-python-client (deploy/lib/common.sh) from the gateway's GET /openapi.json into a folder
on PYTHONPATH, and runs this against the real stack (gateway, apns-sender, liveactivity and the
APNs simulator on the test Postgres and a Redis of its own). It passes:

  BK_URL         the gateway, e.g. http://127.0.0.1:54321
  BK_TENANT_KEY  the demo tenant's key (every scope of the tenant)
  BK_PACKAGE     the generated package's name (buzz_kit_api_client)

Only the generated code talks to the API: typed request models in, typed answers out. Every
answer is checked three ways: its status is the one the call documents, it parses into the
documented success type, and that type holds all of it: `to_dict()` gives back exactly the JSON
the server sent (a member the model does not know is lost there), and no typed model keeps a
member in `additional_properties`. Every step prints "ok: ..."; the first failed check prints
"FAILED: ..." and the exit status is 1.
"""
import datetime
import importlib
import json
import os
import re
import sys
import time
import uuid

URL = os.environ["BK_URL"].rstrip("/")
KEY = os.environ["BK_TENANT_KEY"]
PACKAGE = os.environ.get("BK_PACKAGE", "buzz_kit_api_client")

client_module = importlib.import_module(PACKAGE)
models = importlib.import_module(PACKAGE + ".models")
types = importlib.import_module(PACKAGE + ".types")


def api(name):
    return importlib.import_module(f"{PACKAGE}.api.default.{name}")


class Failed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failed(message)


_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def normalized(value):
    """JSON with date-times as instants (the server writes 12:00:00.5+00:00, Python 12:00:00.500000+00:00)."""
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    if isinstance(value, str) and _DATE_TIME.match(value):
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value


def differences(expected, actual, path="$"):
    """Where two JSON values differ, as readable lines."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        lines = []
        for key in sorted(set(expected) | set(actual)):
            if key not in actual:
                lines.append(f"{path}.{key}: in the answer, missing from the model ({expected[key]!r})")
            elif key not in expected:
                lines.append(f"{path}.{key}: in the model, not in the answer ({actual[key]!r})")
            else:
                lines += differences(expected[key], actual[key], f"{path}.{key}")
        return lines
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [line for i, (e, a) in enumerate(zip(expected, actual)) for line in differences(e, a, f"{path}[{i}]")]
    return [] if expected == actual else [f"{path}: the answer has {expected!r}, the model {actual!r}"]


def untyped_members(value, path="$"):
    """Members a typed model (one with declared fields) keeps only as additional properties."""
    found = []
    if isinstance(value, list):
        for i, item in enumerate(value):
            found += untyped_members(item, f"{path}[{i}]")
        return found
    fields = getattr(type(value), "__attrs_attrs__", None)
    if fields is None:
        return found
    declared = [f.name for f in fields if f.name != "additional_properties"]
    extra = getattr(value, "additional_properties", {}) or {}
    if declared and extra:
        found.append(f"{path} ({type(value).__name__}): {sorted(extra)}")
    for name in declared:
        found += untyped_members(getattr(value, name), f"{path}.{name}")
    return found


def call(module, status, **arguments):
    """One call through the generated client; returns the envelope's typed `data`."""
    response = api(module).sync_detailed(client=CLIENT, **arguments)
    raw = json.loads(response.content) if response.content else None
    check(int(response.status_code) == status, f"{module}: status {int(response.status_code)}, expected {status}: {raw}")
    parsed = response.parsed
    expected_type = "".join(part.title() for part in module.split("_")) + f"Response{status}"
    check(
        parsed is not None and type(parsed).__name__ == expected_type,
        f"{module}: the answer parsed as {type(parsed).__name__}, expected {expected_type}",
    )
    lost = differences(normalized(raw), normalized(parsed.to_dict()))
    check(not lost, f"{module}: the typed answer is not the answer:\n  " + "\n  ".join(lost))
    untyped = untyped_members(parsed)
    check(not untyped, f"{module}: members no model declares:\n  " + "\n  ".join(untyped))
    return parsed.data


def until(what, probe, limit=60.0):
    deadline = time.monotonic() + limit
    while True:
        value = probe()
        if value is not None:
            return value
        check(time.monotonic() < deadline, f"timed out waiting for {what}")
        time.sleep(0.2)


CLIENT = client_module.AuthenticatedClient(base_url=URL, token=KEY, timeout=30.0)


def main():
    subscriber = f"gen-{uuid.uuid4().hex[:8]}"
    workflow_key = f"cart-nudge-{uuid.uuid4().hex[:8]}"
    token = uuid.uuid4().hex + uuid.uuid4().hex

    device = call(
        "register_device",
        201,
        id=subscriber,
        token=token,
        body=models.RegisterDeviceBody(
            environment=models.RegisterDeviceBodyEnvironment.SANDBOX, bundle_id="com.example.app", locale="en-US"
        ),
    )
    check(device.token == token and device.subscriber_id == subscriber and device.active, f"device: {device}")
    print("ok: registered a device (typed body, typed answer)")

    data = models.SendMessageRequestDataType0.from_dict({"orderId": 42, "tags": ["a", "b"]})
    accepted = call(
        "send_message",
        202,
        body=models.SendMessageRequest(
            to=subscriber,
            title="Hello",
            body="From a generated client",
            data=data,
            priority=models.PushPriorityType0.HIGH,
            interruption_level=models.InterruptionLevel.ACTIVE,
            collapse_id="order-42",
        ),
    )
    check(isinstance(accepted.id, uuid.UUID) and accepted.status.value == "queued", f"accepted: {accepted}")
    print("ok: sent a message (SendMessageRequest with title, body, data, priority)")

    def settled():
        message = call("get_message", 200, id=accepted.id)
        return message if message.status.value == "completed" else None

    message = until("the message to settle", settled)
    check(message.target.to == [subscriber], f"target: {message.target}")
    check(message.content.title == "Hello" and message.content.body == "From a generated client", f"{message.content}")
    check(message.content.data.to_dict() == {"orderId": 42, "tags": ["a", "b"]}, f"data: {message.content.data}")
    check(message.counts.sent == 1 and message.audience_size == 1, f"counts: {message.counts}")
    check(message.pending == 0 and message.completed_at is not None, f"completion: {message}")
    check(message.workflow is None and message.kind.value == "push", f"message: {message}")
    print("ok: read the message (target, content and counts typed)")

    deliveries = call("list_message_deliveries", 200, id=accepted.id)
    check(len(deliveries) == 1, f"deliveries: {deliveries}")
    delivery = deliveries[0]
    check(delivery.status.value == "sent" and delivery.device_token == token, f"delivery: {delivery}")
    print("ok: listed its deliveries")

    detail = call("get_delivery", 200, id=delivery.id)
    check(detail.delivery.id == delivery.id and detail.delivery.attempt_count == len(detail.attempts), f"{detail}")
    attempt = detail.attempts[0]
    check(attempt.status == 200 and attempt.error is None, f"attempt: {attempt}")
    check(isinstance(attempt.at, datetime.datetime), f"attempt.at: {attempt.at!r}")
    age = datetime.datetime.now(datetime.timezone.utc) - attempt.at
    check(datetime.timedelta(0) <= age < datetime.timedelta(minutes=5), f"attempt.at {attempt.at} is not when it was sent")
    check(json.loads(attempt.payload)["aps"]["alert"] == {"title": "Hello", "body": "From a generated client"}, attempt.payload)
    check(attempt.headers["apns-collapse-id"] == "order-42", f"headers: {attempt.headers.to_dict()}")
    print("ok: read one delivery with its attempts (at is a date-time)")

    definition = models.WorkflowDefinition(
        trigger=models.WorkflowEventRule(event="cart.updated", where="event.data.total > 10"),
        cancel_on=[
            models.WorkflowEventRule(event="cart.checked_out", where="event.data.cartId == trigger.data.cartId")
        ],
        steps=[
            models.WorkflowStep(name="pause", wait=models.WorkflowWait(duration="30m")),
            models.WorkflowStep(
                name="nudge",
                send=models.WorkflowSend(
                    title="Still there?",
                    body="Your cart {{ trigger.data.cartId }}",
                    deliver=models.WorkflowSendDeliver.PUSH,
                    policy=models.WorkflowSendPolicy.IGNORE,
                    priority=models.PushPriorityType1.VALUE_5,
                    data=models.WorkflowSendData.from_dict({"kind": "cart"}),
                ),
            ),
            models.WorkflowStep(
                name="evening",
                wait_until=models.WorkflowWaitUntil(time="19:00", timezone="Europe/Berlin"),
            ),
            models.WorkflowStep(
                name="review",
                wait_for=models.WorkflowWaitFor(event="cart.checked_out", timeout="2d"),
            ),
            models.WorkflowStep(
                name="check",
                branch=models.WorkflowBranch(
                    if_=models.WorkflowConditionAny(
                        any_=[
                            models.WorkflowConditionOpened(opened="nudge"),
                            models.WorkflowConditionNot(not_=models.WorkflowConditionMatched(matched="review")),
                            'subscriber.attributes.plan == "pro"',
                        ]
                    ),
                    then=[models.WorkflowStep(name="done", exit_=models.WorkflowExit())],
                    else_=[
                        models.WorkflowStep(
                            name="again",
                            send=models.WorkflowSend(
                                body="How did it go?",
                                deliver=models.WorkflowSendDeliver.PUSH,
                                policy=models.WorkflowSendPolicy.RESPECT,
                            ),
                        )
                    ],
                ),
            ),
        ],
    )
    # The stored definition is the canonical one: defaults spelled out (deliver, policy), as sent here.
    saved = call("save_workflow", 201, key=workflow_key, body=definition)
    check(saved.version == 1 and saved.changed is True and saved.trigger_event == "cart.updated", f"saved: {saved}")
    check(saved.definition.to_dict() == definition.to_dict(), f"stored {saved.definition.to_dict()}")
    read = call("get_workflow", 200, key=workflow_key)
    check(read.definition.to_dict() == definition.to_dict() and read.digest == saved.digest, f"read: {read}")
    branch = read.definition.steps[4].branch
    check(isinstance(branch.if_, models.WorkflowConditionAny), f"if: {branch.if_!r}")
    check(isinstance(branch.if_.any_[1].not_, models.WorkflowConditionMatched), f"not: {branch.if_.any_[1]!r}")
    check(isinstance(read.definition.steps[1].send.policy, models.WorkflowSendPolicy), "policy is not typed")
    print("ok: saved and read a workflow (steps, branch and conditions typed)")

    activity_token = uuid.uuid4().hex + uuid.uuid4().hex
    call(
        "register_live_activity",
        201,
        id=subscriber,
        activity_id="match-1",
        body=models.RegisterLiveActivityBody(
            attributes_type="MatchAttributes",
            token=activity_token,
            environment=models.RegisterLiveActivityBodyEnvironment.SANDBOX,
        ),
    )
    sent = call(
        "send_live_activity",
        200,
        body=models.LiveActivitySendRequest(
            to=subscriber,
            event=models.LiveActivitySendRequestEvent.UPDATE,
            activity_id="match-1",
            content_state=models.LiveActivitySendRequestContentState.from_dict({"score": 1}),
            alert=models.LiveActivityAlert(title="Goal", body="1-0"),
            timestamp=1_800_000_060,
        ),
    )
    check(len(sent.results) == 1, f"results: {sent.results}")
    result = sent.results[0]
    check(result.status.value == "sent" and result.apns_status == 200 and result.activity_id == "match-1", f"{result}")
    update = call("get_delivery", 200, id=result.delivery_id)
    check(len(update.attempts) == 1 and isinstance(update.attempts[0].at, datetime.datetime), f"{update.attempts}")
    print("ok: sent a Live Activity update (LiveActivitySendRequest) and read its delivery")


if __name__ == "__main__":
    try:
        main()
    except Failed as failure:
        print(f"FAILED: {failure}")
        sys.exit(1)
    print("ok: every call went through the generated client")
