"""What schemathesis needs to know about BuzzKit's API document beyond JSON Schema.

The document (GET /openapi.json) states every rule the gateway enforces. Most are JSON Schema
(patterns, lengths, enums, oneOf); the few JSON Schema cannot state are named there, and this
file teaches the generator each of them, so a request the document calls valid is one the
gateway must accept:

- `format: buzzkit-cursor`: a page cursor is opaque; only the empty string (the first page) or a
  `metadata.cursor` the list returned is valid. Generated: the empty string.
- `format: buzzkit-audience-expression`: the audience language (README). Generated from a small
  grammar of valid expressions.
- `format: buzzkit-p8-private-key`: the PEM text of an EC P-256 private key. Generated: a fresh
  key made here.
- `format: buzzkit-webhook-url`: an https URL whose host resolves to public addresses, or (as this
  run's gateway allows, BUZZKIT_WEBHOOKS_ALLOW_PRIVATE=true) an http URL on loopback. Generated:
  loopback URLs on a closed port (nothing is sent: no webhooks service runs here).
- `x-max-utf8-bytes: N`: at most N bytes of UTF-8 on top of `maxLength` (characters).
- `x-rules` on `POST /v1/messages` and the descriptions of the event timestamp and of
  `POST /v1/identify`: cross-field and time-dependent rules, listed in words. Schema-valid
  (positive) cases that break one are dropped here, or moved into the allowed time window.
- `PUT /v1/workflows/{key}` takes any JSON object and answers 422 for one that is not a
  definition (its `x-rules`): a positive case's body becomes one of a few valid definitions,
  chosen by the generated body (so the run stays deterministic), keeping a generated `enabled`.
- `POST /v1/workflows/{key}/dry-run`: a `subscriber` given as a string must be one of the
  tenant's subscribers (`x-rules`): a positive case's string becomes the seeded `alice`; so does
  the `to` of `POST /v1/workflows/{key}/trigger`.
- `POST /v1/live-activities/send` (`x-rules`): update and end need `activityId` and take no
  `attributesType`/`attributes`; start needs `attributesType` and `alert` and takes no
  `activityId`. A positive case is pointed at what the run seeded (alice's activity `act-seed`
  and her push-to-start token of `MatchAttributes`) and made to follow those rules.

Only positive cases are touched: a negative case stays exactly as generated.
"""

import datetime
import hashlib
import json
import os

import schemathesis
from hypothesis import strategies as st

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

SEGMENT = os.environ.get("BUZZKIT_SCHEMATHESIS_SEGMENT", "vip")
KEEP_KEYS = {k.strip().lower() for k in os.environ.get("BUZZKIT_SCHEMATHESIS_KEEP_KEYS", "").split(",") if k.strip()}

schemathesis.openapi.format("buzzkit-cursor", st.just(""))
schemathesis.openapi.format(
    "buzzkit-webhook-url", st.integers(min_value=0, max_value=999).map(lambda n: f"http://127.0.0.1:9/hooks/{n}"))

_PEM = (
    ec.generate_private_key(ec.SECP256R1())
    .private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    .decode()
)
schemathesis.openapi.format("buzzkit-p8-private-key", st.just(_PEM))

_names = st.sampled_from(["plan", "age", "country", "profile.age", "email"])
_typed = st.sampled_from(["timezone", "locale"])  # built-in text attributes: compared with strings only
_strings = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", max_size=8).map(json.dumps)
_numbers = st.integers(min_value=-1000, max_value=1000).map(str)
_leaf = st.one_of(
    st.tuples(_names, st.sampled_from(["==", "!="]), st.one_of(_strings, _numbers)).map(" ".join),
    st.tuples(_names, st.sampled_from([">", ">=", "<", "<="]), _numbers).map(" ".join),
    st.tuples(_typed, st.sampled_from(["==", "!="]), _strings).map(" ".join),
    st.one_of(_names, _typed).map(lambda n: f"exists({n})"),
    st.tuples(st.one_of(_names, _typed), _strings).map(lambda t: f"{t[0]} startsWith {t[1]}"),
    st.lists(_strings, min_size=1, max_size=3).map(lambda xs: "country in [" + ", ".join(xs) + "]"),
    st.sampled_from(["sports", "news"]).map(lambda t: f'in_topic("{t}")'),
    st.sampled_from(["sandbox", "production"]).map(lambda e: f'has_device(environment: "{e}")'),
    st.tuples(st.sampled_from(["app.opened", "cart.checked_out"]), st.sampled_from(["1d", "7d", "30d"])).map(
        lambda t: f'did("{t[0]}", within: "{t[1]}")'
    ),
    st.tuples(st.integers(min_value=0, max_value=9)).map(lambda t: f'count("app.opened", within: "30d") >= {t[0]}'),
)
_expression = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["and", "or"]), inner).map(" ".join),
        inner.map(lambda e: f"not ({e})"),
        inner.map(lambda e: f"({e})"),
    ),
    max_leaves=4,
)
schemathesis.openapi.format("buzzkit-audience-expression", _expression)


def _positive(case):
    meta = case.meta
    return meta is not None and meta.generation.mode.is_positive


def _utf8(value):
    return len(value.encode("utf-8", "surrogatepass")) if isinstance(value, str) else 0


def _present(body, name):
    return isinstance(body, dict) and body.get(name) is not None


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _parse_time(text):
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except (TypeError, ValueError):
        return None


def _events_ok(body):
    if not isinstance(body, dict):
        return True
    if any(_utf8(body.get(name)) > 256 for name in ("subscriberId", "anonymousId")):
        return False
    events = body.get("events")
    if not isinstance(events, list):
        return True
    return all(_utf8(e.get("id")) <= 128 and _utf8(e.get("name")) <= 128 for e in events if isinstance(e, dict))


def _message_ok(body):
    if not isinstance(body, dict):
        return True
    buttons = body.get("actions") if isinstance(body.get("actions"), list) else []
    if any(isinstance(b, dict) and _utf8(b.get("id")) > 64 for b in buttons):
        return False
    if _utf8(body.get("collapseId")) > 64:
        return False
    action = body.get("action")
    if isinstance(action, dict) and _utf8(action.get("name")) > 128:
        return False
    # The payload limit (4096 bytes) with room for what BuzzKit adds: the content, escaped, well under it.
    return len(json.dumps(body, ensure_ascii=True)) <= 2500


_FILTERS = {
    ("POST", "/v1/events"): _events_ok,
    ("POST", "/v1/messages"): _message_ok,
    ("POST", "/v1/messages/preview"): _message_ok,
    ("POST", "/v1/identify"): lambda b: not isinstance(b, dict) or b.get("anonymousId") != b.get("subscriberId"),
    ("POST", "/v1/installations"): lambda b: not isinstance(b, dict) or _utf8(b.get("anonymousId")) <= 128,
}


def _has_nul(body):
    try:
        return "\\u0000" in json.dumps(body)
    except (TypeError, ValueError):
        return False


def _body_ok(method, path, body):
    if _has_nul(body):
        return False  # no string of a body may hold U+0000 (the document says so once, for every route)
    check = _FILTERS.get((method.upper(), path))
    return check is None or check(body)


@schemathesis.hook
def filter_case(context, case):
    """Coverage-phase cases: drop schema-valid ones that break a rule stated in words."""
    if not _positive(case):
        return True
    return _body_ok(case.method, case.operation.path, getattr(case, "body", None))


@schemathesis.hook
def filter_body(context, body):
    """Drawn bodies (fuzzing): the same, whatever the mode (a dropped negative body would be refused anyway)."""
    operation = context.operation
    return operation is None or _body_ok(operation.method, operation.path, body)


_DEFINITIONS = [
    {"trigger": {"event": "signup.completed"}, "steps": [{"name": "welcome", "send": {"title": "Welcome"}}]},
    {
        "trigger": {"event": "cart.updated", "where": 'event.data.total > 10'},
        "cancelOn": [{"event": "cart.checked_out", "where": "event.data.cartId == trigger.data.cartId"}],
        "steps": [
            {"name": "pause", "wait": {"duration": "30m"}},
            {"name": "nudge", "send": {"title": "Still there?", "body": "Your cart: {{ trigger.data.cartId }}", "policy": "ignore"}},
        ],
    },
    {
        "trigger": {"event": "workout.started"},
        "steps": [
            {"name": "evening", "waitUntil": {"time": "19:00", "timezone": "Europe/Berlin"}},
            {"name": "remind", "send": {"title": "Hi {{ subscriber.id }}", "data": {"kind": "reminder"}}},
            {"name": "review", "waitFor": {"event": "workout.rated", "timeout": "2d"}},
            {"name": "check", "branch": {
                "if": {"any": [{"opened": "remind"}, {"matched": "review"}]},
                "then": [{"name": "done", "exit": {}}],
                "else": [{"name": "again", "send": {"body": "How did it go?"}}],
            }},
        ],
    },
    {
        "trigger": {"event": "app.opened"},
        "steps": [
            {"name": "morning", "waitUntil": {"time": "08:30"}},
            {"name": "digest", "branch": {"if": 'subscriber.attributes.plan == "pro"',
                                          "then": [{"name": "pro", "send": {"title": "Your digest", "badge": 1}}]}},
        ],
    },
]


def _definition_for(body):
    """A valid definition in place of a generated positive body (which is any object)."""
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode("utf-8", "surrogatepass")).digest()
    definition = json.loads(json.dumps(_DEFINITIONS[digest[0] % len(_DEFINITIONS)]))
    if isinstance(body, dict) and isinstance(body.get("enabled"), bool):
        definition["enabled"] = body["enabled"]
    return definition


def _fix_live_activity(body):
    """A schema-valid Live Activity send aimed at the seeded registry, following the x-rules."""
    body["to"] = "alice"
    if body.get("event") == "start":
        body["attributesType"] = "MatchAttributes"
        if not isinstance(body.get("alert"), dict):
            body["alert"] = {"title": "Kick-off"}
        body.pop("activityId", None)
    else:
        body["activityId"] = "act-seed"
        body.pop("attributesType", None)
        body.pop("attributes", None)


def _fix_message(body):
    """A schema-valid message that breaks a cross-field rule, made to follow it."""
    visible = _present(body, "title") or _present(body, "body")
    if not visible:
        body["title"] = "Hello"  # buttons, images and levels need something visible; silent ones need data
    buttons = body.get("actions")
    if isinstance(buttons, list):
        for index, button in enumerate(buttons):
            if isinstance(button, dict):
                button["id"] = f"b{index}"  # unique within the message
                if button.get("placeholder") is not None:
                    button["input"] = True


@schemathesis.hook
def before_call(context, case, kwargs):
    """Runs before every request of every phase (stateful ones too)."""
    key = (case.method.upper(), case.operation.path)
    parameters = case.path_parameters or {}
    # What the run itself stands on stays: its own API keys and the segment its messages name.
    if key == ("DELETE", "/v1/api-keys/{id}") and str(parameters.get("id", "")).lower() in KEEP_KEYS:
        parameters["id"] = "00000000-0000-4000-8000-000000000000"
    if key == ("DELETE", "/v1/segments/{key}") and parameters.get("key") == SEGMENT:
        parameters["key"] = SEGMENT + "-other"
    # Alice holds the seeded Live Activity registry the sends are pointed at: she stays.
    if key == ("DELETE", "/v1/subscribers/{id}") and parameters.get("id") == "alice":
        parameters["id"] = "alice-other"
    if not _positive(case) or not isinstance(case.body, dict):
        return
    if key == ("PUT", "/v1/workflows/{key}"):
        case.body = _definition_for(case.body)
        return
    if key == ("POST", "/v1/live-activities/send"):
        _fix_live_activity(case.body)
        return
    if key == ("POST", "/v1/workflows/{key}/dry-run") and isinstance(case.body.get("subscriber"), str):
        case.body["subscriber"] = "alice"
    if key == ("POST", "/v1/workflows/{key}/trigger") and isinstance(case.body.get("to"), str):
        case.body["to"] = "alice"
    now = _now()
    if key == ("POST", "/v1/events"):
        # From 2000-01-01 to 24 hours ahead: a generated moment outside that window becomes now.
        earliest = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
        for event in case.body.get("events") or []:
            if isinstance(event, dict) and isinstance(event.get("timestamp"), str):
                moment = _parse_time(event["timestamp"])
                if moment is not None and moment.tzinfo is not None and not (earliest <= moment <= now + datetime.timedelta(hours=23)):
                    event["timestamp"] = now.isoformat()
        for index, event in enumerate(case.body.get("events") or []):
            if isinstance(event, dict) and isinstance(event.get("id"), str):
                digest = hashlib.sha256(event["id"].encode("utf-8", "surrogatepass")).hexdigest()[:16]
                event["id"] = f"e{index}-{digest}"  # unique within the batch
    if key in (("POST", "/v1/messages"), ("POST", "/v1/messages/preview")):
        moment = _parse_time(case.body.get("expiresAt")) if isinstance(case.body.get("expiresAt"), str) else None
        if moment is not None and moment.tzinfo is not None and moment < now + datetime.timedelta(minutes=5):
            case.body["expiresAt"] = (now + datetime.timedelta(days=1)).isoformat()
        if isinstance(case.body.get("segment"), str):
            case.body["segment"] = SEGMENT  # the one saved segment the run set up
        _fix_message(case.body)
