"""Which request bodies the API document accepts, by a JSON Schema validator no one here wrote.

Used by DocumentRulesTests: reads {"document": <GET /openapi.json>, "cases": [{"schema": name,
"body": ...}]} on stdin and prints one JSON list: for each case, whether the body is valid against
components.schemas[name] (JSON Schema 2020-12, as OpenAPI 3.1 uses it; formats are annotations,
as the specification leaves them). The test compares each verdict with the gateway's own validator.
"""
import json
import sys

from jsonschema import Draft202012Validator

request = json.load(sys.stdin)
document = request["document"]
verdicts = []
for case in request["cases"]:
    schema = {"$ref": "#/components/schemas/" + case["schema"], "components": document["components"]}
    verdicts.append(Draft202012Validator(schema).is_valid(case["body"]))
print(json.dumps(verdicts))
