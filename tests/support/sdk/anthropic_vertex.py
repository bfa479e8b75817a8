"""The official `anthropic` SDK's AnthropicVertex client at a loopback mock.

argv: base URL (the mock's root), project, region, model. The credentials
come as Google's auth library finds them (GOOGLE_APPLICATION_CREDENTIALS),
so the mock's token endpoint sees the library's own signed JWT. Prints one
JSON line: the text, the tool calls, the usage and the stop reason the SDK
read from the streamed reply; any error is the script's failure.
"""

import json
import sys

from anthropic import AnthropicVertex


def main() -> None:
    base, project, region, model = sys.argv[1:5]
    client = AnthropicVertex(region=region, project_id=project, base_url=base + "/v1")
    out = {"text": "", "calls": [], "usage": None, "stop": None}
    with client.messages.stream(
        model=model, max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        message = stream.get_final_message()
    for block in message.content:
        if block.type == "text":
            out["text"] += block.text
        elif block.type == "tool_use":
            out["calls"].append({"name": block.name, "input": block.input})
    out["usage"] = {"input": message.usage.input_tokens, "output": message.usage.output_tokens}
    out["stop"] = message.stop_reason
    print(json.dumps(out))


main()
