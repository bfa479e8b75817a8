#!/usr/bin/env python3
"""Checks spans (the JSON lines otlp_receiver.py writes) against the
OpenTelemetry semantic conventions' attribute registries vendored in
tests/data/semconv (and leash's own, leash.yaml there): every attribute of
every span and span event must be one the registries define, of the type
they give it, and an enum's value one of its members (or, where leash.yaml
lists custom values for an open enum, one of those). The finish reasons
must be the output messages schema's `FinishReason` values. A message
that captures content must follow the conventions' JSON schemas' shape.

Usage: semconv_check.py REGISTRY_DIR SPANS.jsonl. Prints one line per
problem and exits 1 if there is any; prints the attributes it checked and
exits 0 otherwise."""

import json
import pathlib
import re
import sys

import yaml

DIR = pathlib.Path(sys.argv[1])
SPANS = pathlib.Path(sys.argv[2])


def registry():
    """name -> (type, members or None) from every YAML registry."""
    known = {}
    custom = {}
    for path in sorted(DIR.glob("*.yaml")):
        document = yaml.safe_load(path.read_text())
        custom.update(document.get("custom_values", {}) or {})
        for group in document.get("groups", []):
            for attribute in group.get("attributes", []) or []:
                kind = attribute.get("type")
                members = None
                if isinstance(kind, dict):
                    members = [str(member["value"]) for member in kind.get("members", [])]
                    kind = "enum"
                known[attribute["id"]] = (kind, members)
    return known, custom


def finish_reasons():
    schema = json.loads((DIR / "gen-ai-output-messages.json").read_text())
    return schema["$defs"]["FinishReason"]["enum"]


def type_of(value):
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        if all(isinstance(item, str) for item in value):
            return "string[]"
        if all(isinstance(item, bool) for item in value):
            return "boolean[]"
        if all(isinstance(item, int) for item in value):
            return "int[]"
        return "double[]"
    return "other"


def messages_problems(name, value):
    """The captured messages' shape: a JSON array of messages with a role
    and typed parts (gen-ai-input/output-messages.json)."""
    try:
        messages = json.loads(value)
    except (TypeError, ValueError):
        return [f"{name} is not JSON"]
    if name == "gen_ai.system_instructions":
        messages = [{"role": "system", "parts": messages}]
    if not isinstance(messages, list):
        return [f"{name} is not a JSON array"]
    problems = []
    for message in messages:
        if not isinstance(message, dict) or "role" not in message or not isinstance(
            message.get("parts"), list
        ):
            problems.append(f"{name}: a message without role and parts: {message!r}"[:200])
            continue
        for part in message["parts"]:
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                problems.append(f"{name}: a part without a type: {part!r}"[:200])
        if name == "gen_ai.output.messages":
            if message.get("finish_reason") not in REASONS:
                problems.append(f"{name}: finish_reason {message.get('finish_reason')!r}")
    return problems


KNOWN, CUSTOM = registry()
REASONS = finish_reasons()
MESSAGES = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"}


def check(where, attributes, problems, seen):
    for name, value in attributes.items():
        seen.add(name)
        if name not in KNOWN:
            problems.append(f"{where}: {name} is in no registry of the conventions or leash")
            continue
        kind, members = KNOWN[name]
        actual = type_of(value)
        if kind == "enum":
            if actual != "string":
                problems.append(f"{where}: {name} is a {actual}, not an enum's string")
            elif value not in members and not (
                name in CUSTOM and re.fullmatch(CUSTOM[name], value)
            ):
                problems.append(f"{where}: {name}={value!r} is no member of its enum")
        elif kind == "any":
            if name in MESSAGES:
                problems.extend(f"{where}: {problem}" for problem in messages_problems(name, value))
        elif kind != actual:
            problems.append(f"{where}: {name} is a {actual}, the registry says {kind}")
        if name == "gen_ai.response.finish_reasons" and actual == "string[]":
            for reason in value:
                if reason not in REASONS:
                    problems.append(f"{where}: finish reason {reason!r} is not one of {REASONS}")


def main():
    problems = []
    seen = set()
    for line in SPANS.read_text().splitlines():
        span = json.loads(line)
        where = span.get("name", "?")
        check(where, span.get("attributes", {}), problems, seen)
        for event in span.get("events", []):
            check(f"{where} event {event.get('name')}", event.get("attributes", {}), problems, seen)
    for problem in problems:
        print(problem)
    if problems:
        sys.exit(1)
    print("checked: " + ", ".join(sorted(seen)))


main()
