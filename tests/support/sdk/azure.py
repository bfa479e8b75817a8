"""The official `openai` SDK's AzureOpenAI client at a loopback mock.

argv: endpoint, key, deployment, api-version, mode ("chat" or "responses").
Prints one JSON line: the text, the tool calls and the usage the SDK read
from the streamed reply; any error the SDK raised is the script's failure.
"""

import json
import sys

from openai import AzureOpenAI


def main() -> None:
    endpoint, key, deployment, version, mode = sys.argv[1:6]
    client = AzureOpenAI(
        azure_endpoint=endpoint, api_key=key, api_version=version, max_retries=0
    )
    out = {"text": "", "calls": [], "usage": None, "finish": None}
    if mode == "chat":
        stream = client.chat.completions.create(
            model=deployment,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        calls = {}
        for chunk in stream:
            if chunk.usage is not None:
                out["usage"] = chunk.usage.model_dump()
            for choice in chunk.choices:
                if choice.delta.content:
                    out["text"] += choice.delta.content
                for call in choice.delta.tool_calls or []:
                    entry = calls.setdefault(call.index, {"id": None, "name": None, "arguments": ""})
                    if call.id:
                        entry["id"] = call.id
                    if call.function and call.function.name:
                        entry["name"] = call.function.name
                    if call.function and call.function.arguments:
                        entry["arguments"] += call.function.arguments
                if choice.finish_reason:
                    out["finish"] = choice.finish_reason
        out["calls"] = [calls[index] for index in sorted(calls)]
    else:
        stream = client.responses.create(model=deployment, input="hi", stream=True)
        for event in stream:
            if event.type == "response.output_text.delta":
                out["text"] += event.delta
            elif event.type == "response.completed":
                out["finish"] = event.response.status
                out["usage"] = event.response.usage.model_dump()
    print(json.dumps(out))


main()
