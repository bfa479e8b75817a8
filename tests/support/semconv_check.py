#!/usr/bin/env python3
"""Checks spans (the JSON lines otlp_receiver.py writes) against the
OpenTelemetry semantic conventions' attribute registries vendored in
tests/data/semconv (and leash's own, leash.yaml there): every attribute of
every span and span event must be one the registries define, of the type
they give it, and an enum's value one of its members (or, where leash.yaml
lists custom values for an open enum, one of those). The finish reasons
must be the output messages schema's `FinishReason` values. A message
that captures content must follow the conventions' JSON schemas' shape.

With a third argument, METRICS.jsonl (the metric points otlp_receiver.py
writes), every metric point is read against the conventions' metric
definitions (gen-ai-metrics.yaml) and their text (gen-ai-metrics.md): the
metric is one they define, its instrument and unit are theirs, each
attribute is one the metric lists (checked like a span's: type, enum
value), every required attribute is there (`server.port` with
`server.address`), and a histogram's bucket boundaries are the ones the
text advises.

Usage: semconv_check.py REGISTRY_DIR SPANS.jsonl [METRICS.jsonl]. Prints
one line per problem and exits 1 if there is any; prints the attributes
and metrics it checked and exits 0 otherwise."""

import json
import pathlib
import re
import sys

import yaml

DIR = pathlib.Path(sys.argv[1])
SPANS = pathlib.Path(sys.argv[2])
METRICS = pathlib.Path(sys.argv[3]) if len(sys.argv) > 3 else None


def registry():
    """name -> (type, members or None) from every YAML registry."""
    known = {}
    custom = {}
    for path in sorted(DIR.glob("*.yaml")):
        document = yaml.safe_load(path.read_text())
        custom.update(document.get("custom_values", {}) or {})
        for group in document.get("groups", []):
            for attribute in group.get("attributes", []) or []:
                if "id" not in attribute:
                    continue  # a metric's reference to a registry attribute
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


def metric_definitions():
    """metric name -> (instrument, unit, value type, {attribute: requirement})
    from every group of type metric, its `extends` chain included."""
    groups = {}
    for path in sorted(DIR.glob("*.yaml")):
        for group in yaml.safe_load(path.read_text()).get("groups", []):
            groups[group["id"]] = group

    def attributes_of(group):
        found = {}
        if group.get("extends"):
            found.update(attributes_of(groups[group["extends"]]))
        for attribute in group.get("attributes", []) or []:
            name = attribute.get("ref") or attribute.get("id")
            level = attribute.get("requirement_level", "recommended")
            found[name] = level if isinstance(level, str) else next(iter(level))
        return found

    metrics = {}
    for group in groups.values():
        if group.get("type") == "metric":
            value_type = (
                group.get("annotations", {}).get("code_generation", {}).get("metric_value_type")
            )
            metrics[group["metric_name"]] = (
                group["instrument"],
                group["unit"],
                value_type,
                attributes_of(group),
            )
    return metrics


def advised_buckets():
    """metric name -> the bucket boundaries its section of the text advises."""
    text = (DIR / "gen-ai-metrics.md").read_text()
    advised = {}
    for section in re.split(r"^### Metric: ", text, flags=re.M)[1:]:
        name = section.split("`")[1]
        found = re.search(r"ExplicitBucketBoundaries\]\s+of\s+\[([^\]]*)\]", section)
        if found:
            advised[name] = [float(bound) for bound in found.group(1).split(",")]
    return advised


def check_metrics(lines, problems, seen):
    definitions = metric_definitions()
    advised = advised_buckets()
    for line in lines:
        point = json.loads(line)
        name = point.get("name", "?")
        seen.add(name)
        if name not in definitions:
            problems.append(f"metric {name} is not one the conventions define")
            continue
        instrument, unit, value_type, allowed = definitions[name]
        if point.get("kind") != instrument:
            problems.append(f"metric {name} is a {point.get('kind')}, the conventions say {instrument}")
        if point.get("unit") != unit:
            problems.append(f"metric {name} has unit {point.get('unit')!r}, the conventions say {unit!r}")
        attributes = point.get("attributes", {})
        for attribute in attributes:
            if attribute not in allowed:
                problems.append(f"metric {name}: {attribute} is not one of its attributes")
        check(f"metric {name}", {k: v for k, v in attributes.items() if k in allowed}, problems, seen)
        for attribute, level in allowed.items():
            if level == "required" and attribute not in attributes:
                problems.append(f"metric {name}: required {attribute} is missing")
        if "server.address" in attributes and "server.port" not in attributes:
            problems.append(f"metric {name}: server.port is missing beside server.address")
        if name in advised and point.get("explicitBounds") != advised[name]:
            problems.append(
                f"metric {name}: buckets {point.get('explicitBounds')} are not the advised {advised[name]}"
            )
        if value_type == "int" and not float(point.get("sum", 0)).is_integer():
            problems.append(f"metric {name}: an int metric with sum {point.get('sum')}")


def main():
    problems = []
    seen = set()
    if METRICS is not None:
        check_metrics(METRICS.read_text().splitlines(), problems, seen)
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
