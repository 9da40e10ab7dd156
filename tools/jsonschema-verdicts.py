#!/usr/bin/python3
"""Validates instances against the TAP schemas with python-jsonschema, offline.

Reads one JSON request on stdin:

    {"schemas": "<schemas/v1 directory>", "bundle": false,
     "cases": [{"schema": "task.request.schema.json", "instance": {...}}, ...]}

With "bundle": false every *.schema.json file is preloaded; with "bundle": true only
bundle.json is, and each schema is found by its $id inside it. Writes one JSON list to
stdout: for each case, {"valid": bool, "errors": ["<keyword> at <JSON pointer>", ...]}.
Formats are not asserted (python-jsonschema's default). Any attempt to fetch a schema
over the network is an error: the schemas must resolve from what was loaded.

Run with Debian's interpreter, /usr/bin/python3, which has python3-jsonschema.
"""
import json
import os
import sys

try:
    import jsonschema
    from jsonschema import Draft202012Validator, RefResolver
except ImportError:
    sys.stderr.write("python3-jsonschema is missing: install it with `apt-get install -y python3-jsonschema`\n")
    sys.exit(3)

BASE = "https://schemas.tap-protocol.org/v1/"


def refuse_network(uri):
    raise RuntimeError(f"{uri} is not among the loaded schemas (no network access)")


def pointer(path):
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def load(directory, name):
    with open(os.path.join(directory, name), encoding="utf-8") as fh:
        return json.load(fh)


def main():
    request = json.load(sys.stdin)
    directory = request["schemas"]
    handlers = {"http": refuse_network, "https": refuse_network}
    if request["bundle"]:
        bundle = load(directory, "bundle.json")
        resolver = RefResolver.from_schema(bundle, handlers=handlers)
        store = None
    else:
        store = {}
        for name in sorted(os.listdir(directory)):
            if name.endswith(".schema.json"):
                schema = load(directory, name)
                store[schema["$id"]] = schema
    validators = {}
    out = []
    for case in request["cases"]:
        name = case["schema"]
        validator = validators.get(name)
        if validator is None:
            if store is None:
                _, schema = resolver.resolve(BASE + name)
                validator = Draft202012Validator(schema, resolver=resolver)
            else:
                schema = store[BASE + name]
                validator = Draft202012Validator(
                    schema, resolver=RefResolver(BASE + name, schema, store=store, handlers=handlers)
                )
            validators[name] = validator
        errors = [f"{e.validator} at {pointer(e.absolute_path)}" for e in validator.iter_errors(case["instance"])]
        out.append({"valid": not errors, "errors": errors})
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
