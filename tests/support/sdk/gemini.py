"""The official `google-genai` SDK's Client at a loopback Gemini mock.

argv: base URL, key, model. Prints one JSON line: the text, thoughts,
function calls, thought signatures, usage and finish reason the SDK read
from the streamed reply; any error the SDK raised is the script's failure
(its message printed on stderr).
"""

import base64
import json
import sys

from google import genai
from google.genai import types


def main() -> None:
    base, key, model = sys.argv[1:4]
    client = genai.Client(api_key=key, http_options=types.HttpOptions(base_url=base, api_version="v1beta"))
    out = {"text": "", "thoughts": "", "calls": [], "signatures": [], "usage": None, "finish": None}
    stream = client.models.generate_content_stream(
        model=model,
        contents="hi",
        config=types.GenerateContentConfig(
            thinking_config=types.ThinkingConfig(thinking_budget=512, include_thoughts=True)
        ),
    )
    for chunk in stream:
        if chunk.usage_metadata is not None:
            out["usage"] = chunk.usage_metadata.model_dump(exclude_none=True, mode="json")
        for candidate in chunk.candidates or []:
            if candidate.finish_reason is not None:
                out["finish"] = candidate.finish_reason.value
            for part in (candidate.content.parts if candidate.content else None) or []:
                if part.thought_signature:
                    out["signatures"].append(base64.b64encode(part.thought_signature).decode())
                if part.function_call is not None:
                    out["calls"].append(
                        {"name": part.function_call.name, "args": part.function_call.args}
                    )
                elif part.text and part.thought:
                    out["thoughts"] += part.text
                elif part.text:
                    out["text"] += part.text
    print(json.dumps(out))


main()
