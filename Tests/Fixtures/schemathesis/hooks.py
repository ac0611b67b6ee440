"""BuzzKit's own formats, taught to schemathesis (SchemathesisTests).

The API document (GET /openapi.json) states every rule the gateway enforces. What JSON Schema can
say is JSON Schema: patterns, lengths, enums, and the rules across members as conditionals
(allOf of if/then). What depends on the server itself (its zone database, its clock, its
parsers, its keys) is a `format` of BuzzKit's own, named and described in the document. A
generator draws valid values of a format only when it knows the format; this file teaches
schemathesis each one, and nothing else:

- buzzkit-time-zone: a zone name of the zone database; buzzkit-workflow-time-zone: also "subscriber".
- buzzkit-audience-expression: the audience language (docs/api.md), from a small grammar of valid
  expressions; buzzkit-workflow-expression: the same over the paths every place of a workflow reads
  (trigger. and subscriber.).
- buzzkit-workflow-key-template: a digest's or throttle's key, a template over the trigger event.
- buzzkit-workflow-text: a send step's text: text without placeholders, or with closed ones naming
  trigger. and subscriber. paths.
- buzzkit-workflow-step-name: a step's name, unique in its workflow: every one drawn is new.
- buzzkit-button-id: a notification button's id, unique within its message's actions: every one
  drawn is new.
- buzzkit-workflow-step-reference: the name of an earlier step of the right kind, which depends on
  the rest of the definition: none is drawn, so valid definitions are drawn without the conditions
  that name steps (those are covered by the workflow definition tests).
- buzzkit-category-key: the key of an existing category of the tenant: one of the two the stack
  makes (KEEP_CATEGORIES), which the run never deletes (below).
- buzzkit-idempotency-key: a key naming one intended operation: a new UUID each time, from
  uuid4 rather than a hypothesis strategy, which draws the same value again (a key drawn twice
  replays the first answer, which is the point of the header: a replayed POST answered with an
  endpoint deleted since).
- buzzkit-webhook-url: an https URL whose host resolves to public addresses, or (as this run's
  gateway allows, BUZZKIT_WEBHOOKS_ALLOW_PRIVATE=true) an http URL on loopback: loopback URLs on a
  closed port (nothing is sent: no webhooks service runs here).
- buzzkit-p8-private-key: the PEM text of an EC P-256 private key (a fresh one, made here).
- buzzkit-event-time: a moment from 2000-01-01 to 24 hours ahead of the clock; buzzkit-future-date-time:
  one not yet passed.
- buzzkit-cursor is opaque (only a metadata.cursor a list returned, or empty): it is taught (the
  empty string) only when BUZZKIT_SCHEMATHESIS_CURSOR=empty. Untaught, schemathesis sends other
  values, the gateway answers 422, and the test accepts exactly that finding: the documented exception.

- x-max-utf8-bytes, the document's one keyword of its own: a string's limit in bytes of UTF-8
  (APNs counts a collapse id in bytes), which JSON Schema cannot state (its maxLength counts code
  points). A body with a longer string is not drawn (`filter_body`): schemathesis knows only
  maxLength, and 64 code points of Greek are 128 bytes.

No other request is filtered or rewritten: a request the document calls valid goes out as generated.
The exceptions keep the run standing: it does not revoke its own API keys
(BUZZKIT_SCHEMATHESIS_KEEP_KEYS), which would turn the rest of the run into 401s, and it does not
delete the two categories buzzkit-category-key draws from (an enabled workflow sending in both
guarded them only until the stateful phase disabled or deleted that workflow first, after which
every later draw of the format named a category that no longer existed).
"""

import datetime
import itertools
import json
import os
import uuid

import schemathesis
from hypothesis import strategies as st

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

KEEP_KEYS = {k.strip().lower() for k in os.environ.get("BUZZKIT_SCHEMATHESIS_KEEP_KEYS", "").split(",") if k.strip()}

if os.environ.get("BUZZKIT_SCHEMATHESIS_CURSOR") == "empty":
    schemathesis.openapi.format("buzzkit-cursor", st.just(""))

_ZONES = [
    "UTC", "Europe/Berlin", "Europe/London", "America/New_York", "America/Los_Angeles", "America/Sao_Paulo",
    "Asia/Tokyo", "Asia/Kolkata", "Asia/Kathmandu", "Australia/Sydney", "Pacific/Auckland", "Africa/Lagos",
]
schemathesis.openapi.format("buzzkit-time-zone", st.sampled_from(_ZONES))
schemathesis.openapi.format("buzzkit-workflow-time-zone", st.sampled_from(["subscriber"] + _ZONES))
# A digest's or throttle's key: a template over the trigger event.
schemathesis.openapi.format(
    "buzzkit-workflow-key-template",
    st.sampled_from(["{{ trigger.data.postId }}", "post-{{ trigger.data.postId }}", "all"]),
)
schemathesis.openapi.format("buzzkit-workflow-step-reference", st.nothing())
schemathesis.openapi.format("buzzkit-idempotency-key", st.just(None).map(lambda _: str(uuid.uuid4())))
KEEP_CATEGORIES = ["news", "offers"]
schemathesis.openapi.format("buzzkit-category-key", st.sampled_from(KEEP_CATEGORIES))
_TEMPLATES = ["{{ trigger.data.name }}", "Hi {{ subscriber.id }}", "https://example.com/p/{{ trigger.data.postId }}"]
schemathesis.openapi.format(
    "buzzkit-workflow-text",
    st.one_of(st.text(max_size=40).filter(lambda s: "{" not in s and "\x00" not in s), st.sampled_from(_TEMPLATES)),
)
_STEP_NAMES = itertools.count(1)
schemathesis.openapi.format(
    "buzzkit-workflow-step-name", st.just(None).map(lambda _: f"step-{next(_STEP_NAMES)}"))
_BUTTON_IDS = itertools.count(1)
schemathesis.openapi.format("buzzkit-button-id", st.just(None).map(lambda _: f"button-{next(_BUTTON_IDS)}"))
schemathesis.openapi.format(
    "buzzkit-webhook-url", st.integers(min_value=0, max_value=999).map(lambda n: f"http://127.0.0.1:9/hooks/{n}"))

_PEM = (
    ec.generate_private_key(ec.SECP256R1())
    .private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    .decode()
)
schemathesis.openapi.format("buzzkit-p8-private-key", st.just(_PEM))


def _moments(earliest, latest):
    """RFC 3339 date-times with an offset between two moments (relative to now, drawn when used)."""

    @st.composite
    def draw(d):
        now = datetime.datetime.now(datetime.timezone.utc)
        seconds = d(st.integers(min_value=int(earliest.total_seconds()), max_value=int(latest.total_seconds())))
        moment = now + datetime.timedelta(seconds=seconds)
        offset = d(st.sampled_from([0, 60, -300, 330]))
        local = moment.astimezone(datetime.timezone(datetime.timedelta(minutes=offset)))
        text = local.isoformat(timespec=d(st.sampled_from(["seconds", "milliseconds", "microseconds"])))
        return text.replace("+00:00", "Z") if offset == 0 else text

    return draw()


schemathesis.openapi.format(
    "buzzkit-event-time", _moments(datetime.timedelta(days=-3650), datetime.timedelta(hours=23))
)
schemathesis.openapi.format(
    "buzzkit-future-date-time", _moments(datetime.timedelta(minutes=10), datetime.timedelta(days=365))
)

_strings = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", max_size=8).map(json.dumps)
_numbers = st.integers(min_value=-1000, max_value=1000).map(str)


def _language(names, typed, functions):
    """Valid expressions over attribute paths `names`, text paths `typed`, and the `functions` leaves."""
    leaf = st.one_of(
        st.tuples(names, st.sampled_from(["==", "!="]), st.one_of(_strings, _numbers)).map(" ".join),
        st.tuples(names, st.sampled_from([">", ">=", "<", "<="]), _numbers).map(" ".join),
        st.tuples(typed, st.sampled_from(["==", "!="]), _strings).map(" ".join),
        st.one_of(names, typed).map(lambda n: f"exists({n})"),
        st.tuples(st.one_of(names, typed), _strings).map(lambda t: f"{t[0]} startsWith {t[1]}"),
        st.tuples(names, st.lists(_strings, min_size=1, max_size=3)).map(lambda t: f"{t[0]} in [{', '.join(t[1])}]"),
        *functions,
    )
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["and", "or"]), inner).map(" ".join),
            inner.map(lambda e: f"not ({e})"),
            inner.map(lambda e: f"({e})"),
        ),
        max_leaves=4,
    )


schemathesis.openapi.format(
    "buzzkit-audience-expression",
    _language(
        st.sampled_from(["plan", "age", "country", "profile.age", "email"]),
        st.sampled_from(["timezone", "locale"]),
        [
            st.sampled_from(["sports", "news"]).map(lambda t: f'in_topic("{t}")'),
            st.sampled_from(["sandbox", "production"]).map(lambda e: f'has_device(environment: "{e}")'),
            st.tuples(st.sampled_from(["app.opened", "cart.updated"]), st.sampled_from(["1d", "7d", "30d"])).map(
                lambda t: f'did("{t[0]}", within: "{t[1]}")'
            ),
            st.integers(min_value=0, max_value=9).map(lambda n: f'count("app.opened", within: "30d") >= {n}'),
        ],
    ),
)
schemathesis.openapi.format(
    "buzzkit-workflow-expression",
    _language(
        st.sampled_from(["subscriber.attributes.plan", "subscriber.attributes.age", "trigger.data.total"]),
        st.sampled_from(["subscriber.id", "subscriber.locale", "subscriber.timezone"]),
        [],
    ),
)


def _within_utf8_limits(schema, value, document, depth=0):
    """False when `value` holds a string longer in UTF-8 than an x-max-utf8-bytes of `schema`
    (references resolved; every branch of a oneOf / anyOf / allOf is held to its limits)."""
    if depth > 40 or not isinstance(schema, dict):
        return True
    while "$ref" in schema:
        node = document
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        schema = node
    limit = schema.get("x-max-utf8-bytes")
    if isinstance(value, str) and limit is not None and len(value.encode("utf-8")) > limit:
        return False
    for key in ("oneOf", "anyOf", "allOf"):
        for branch in schema.get(key, []):
            if not _within_utf8_limits(branch, value, document, depth + 1):
                return False
    for key in ("then", "else"):
        if key in schema and not _within_utf8_limits(schema[key], value, document, depth + 1):
            return False
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for name, member in value.items():
            member_schema = properties.get(name, extra if isinstance(extra, dict) else None)
            if member_schema is not None and not _within_utf8_limits(member_schema, member, document, depth + 1):
                return False
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return all(_within_utf8_limits(schema["items"], item, document, depth + 1) for item in value)
    return True


@schemathesis.hook
def filter_body(context, body):
    """Bodies within the document's x-max-utf8-bytes limits only (see above)."""
    operation = context.operation
    if operation is None:
        return True
    content = (operation.definition.raw.get("requestBody") or {}).get("content", {})
    schema = (content.get("application/json") or {}).get("schema")
    return schema is None or _within_utf8_limits(schema, body, operation.schema.raw_schema)


@schemathesis.hook
def before_call(context, case, kwargs):
    """The run's own keys and the categories its format draws from stay (see above)."""
    parameters = case.path_parameters or {}
    operation = (case.method.upper(), case.operation.path)
    if operation == ("DELETE", "/v1/api-keys/{id}"):
        if str(parameters.get("id", "")).lower() in KEEP_KEYS:
            parameters["id"] = "00000000-0000-4000-8000-000000000000"
    if operation == ("DELETE", "/v1/categories/{key}"):
        if str(parameters.get("key", "")) in KEEP_CATEGORIES:
            parameters["key"] = "not-a-kept-category"
