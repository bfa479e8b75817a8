#!/usr/bin/env python3
"""A small OTLP/HTTP receiver for the tests (tests/support/otlp.rs): it
decodes each POST /v1/traces body with the official definitions (the
`opentelemetry-proto` package from PyPI, in the project venv
.tools/venv) and writes each span as one JSON line (google.protobuf's
json_format, ids in hex, attributes flattened) to OUT. It also appends
every request's raw bytes (headers and body) to OUT.raw, and counts the
connections it accepted in OUT.connections, so a test can assert that
nothing connected or that a key is in no byte that was sent.

A POST /v1/metrics body is decoded as metrics: each histogram data point
becomes one JSON line in OUT.metrics (the metric's name, unit,
description, kind and temporality, its scope and resource, the point's
attributes flattened, count, sum, bucket counts and explicit bounds).

A gzip body (`Content-Encoding: gzip`) is decompressed first; each
request's count goes to OUT.requests.

Usage: otlp_receiver.py OUT MODE, MODE one of `ok`, `slow` (accepts and
never answers), `refuse` (answers 503), `delay:MS` (answers 200 after MS
milliseconds). Prints the port it listens on."""

import gzip
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

OUT, MODE = sys.argv[1], sys.argv[2]
LOCK = threading.Lock()
CONNECTIONS = 0
REQUESTS = 0


def plain(value):
    """An AnyValue (as json_format renders it) as a plain JSON value."""
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return value["doubleValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "arrayValue" in value:
        return [plain(item) for item in value["arrayValue"].get("values", [])]
    return value


def attributes(pairs):
    return {pair["key"]: plain(pair.get("value", {})) for pair in pairs}


def span_line(span, resource, scope_spans):
    line = json_format.MessageToDict(span)
    line["scope"] = {
        "name": scope_spans.scope.name,
        "version": scope_spans.scope.version,
        "schemaUrl": scope_spans.schema_url,
    }
    line["traceId"] = span.trace_id.hex()
    line["spanId"] = span.span_id.hex()
    line["parentSpanId"] = span.parent_span_id.hex()
    line["attributes"] = attributes(line.get("attributes", []))
    for event in line.get("events", []):
        event["attributes"] = attributes(event.get("attributes", []))
    line["resource"] = resource
    return line


TEMPORALITY = {0: "unspecified", 1: "delta", 2: "cumulative"}


def metric_lines(body):
    """One line per data point of every metric in an export request."""
    request = metrics_service_pb2.ExportMetricsServiceRequest()
    request.ParseFromString(body)
    lines = []
    for resource_metrics in request.resource_metrics:
        resource = attributes(
            json_format.MessageToDict(resource_metrics.resource).get("attributes", [])
        )
        for scope_metrics in resource_metrics.scope_metrics:
            scope = {
                "name": scope_metrics.scope.name,
                "version": scope_metrics.scope.version,
                "schemaUrl": scope_metrics.schema_url,
            }
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                data = getattr(metric, kind)
                for point in data.data_points:
                    line = {
                        "name": metric.name,
                        "unit": metric.unit,
                        "description": metric.description,
                        "kind": kind,
                        "temporality": TEMPORALITY.get(
                            getattr(data, "aggregation_temporality", 0), "?"
                        ),
                        "scope": scope,
                        "resource": resource,
                        "attributes": attributes(
                            json_format.MessageToDict(point).get("attributes", [])
                        ),
                    }
                    if kind == "histogram":
                        line.update(
                            count=point.count,
                            sum=point.sum,
                            bucketCounts=list(point.bucket_counts),
                            explicitBounds=list(point.explicit_bounds),
                        )
                    lines.append(line)
    return lines


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def verify_request(self, request, client_address):
        global CONNECTIONS
        with LOCK:
            CONNECTIONS += 1
            with open(OUT + ".connections", "w") as counted:
                counted.write(str(CONNECTIONS))
        return True


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        global REQUESTS
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding", "") == "gzip":
            body = gzip.decompress(body)
        with LOCK:
            REQUESTS += 1
            with open(OUT + ".requests", "w") as counted:
                counted.write(str(REQUESTS))
            with open(OUT + ".raw", "ab") as raw:
                raw.write(self.requestline.encode() + b"\n" + bytes(self.headers) + body + b"\n")
        if MODE.startswith("delay:"):
            time.sleep(int(MODE[len("delay:"):]) / 1000)
        if MODE == "slow":
            time.sleep(60)
            return
        if MODE == "refuse":
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path.rstrip("/").endswith("/v1/metrics"):
            lines = metric_lines(body)
            with LOCK:
                with open(OUT + ".metrics", "a") as out:
                    for line in lines:
                        out.write(json.dumps(line) + "\n")
            answer = metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            return
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        with LOCK:
            with open(OUT, "a") as out:
                for resource_spans in request.resource_spans:
                    resource = attributes(
                        json_format.MessageToDict(resource_spans.resource).get("attributes", [])
                    )
                    for scope_spans in resource_spans.scope_spans:
                        for span in scope_spans.spans:
                            out.write(json.dumps(span_line(span, resource, scope_spans)) + "\n")
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
