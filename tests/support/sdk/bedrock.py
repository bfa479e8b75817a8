"""The official `boto3` bedrock-runtime client's converse_stream at a
loopback Bedrock.

argv: endpoint, region, access key id, secret key, session token ("" for
none), model id. Prints one JSON line: the text, tool calls, stop reason
and usage boto3 read from the event-stream frames; an error boto3 raised
(a refused signature included) is printed as {"error": code, "message"}.
"""

import json
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError


def main() -> None:
    endpoint, region, key_id, secret, token, model = sys.argv[1:7]
    client = boto3.client(
        "bedrock-runtime",
        region_name=region,
        endpoint_url=endpoint,
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
        aws_session_token=token or None,
        config=Config(retries={"max_attempts": 1, "mode": "standard"}),
    )
    out = {"text": "", "calls": [], "stop": None, "usage": None}
    try:
        response = client.converse_stream(
            modelId=model, messages=[{"role": "user", "content": [{"text": "hi"}]}]
        )
    except ClientError as error:
        print(json.dumps({"error": error.response["Error"]["Code"],
                          "message": error.response["Error"]["Message"]}))
        return
    calls = {}
    for event in response["stream"]:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            tool = start["start"].get("toolUse")
            if tool:
                calls[start["contentBlockIndex"]] = {"id": tool["toolUseId"], "name": tool["name"], "input": ""}
        elif "contentBlockDelta" in event:
            delta = event["contentBlockDelta"]
            if "text" in delta["delta"]:
                out["text"] += delta["delta"]["text"]
            if "toolUse" in delta["delta"]:
                calls[delta["contentBlockIndex"]]["input"] += delta["delta"]["toolUse"]["input"]
        elif "messageStop" in event:
            out["stop"] = event["messageStop"]["stopReason"]
        elif "metadata" in event:
            out["usage"] = event["metadata"]["usage"]
    out["calls"] = [calls[index] for index in sorted(calls)]
    print(json.dumps(out))


main()
