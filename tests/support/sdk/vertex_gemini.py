"""The official `google-genai` SDK's Client on Vertex AI at a loopback mock.

argv: base URL, project, location, model. The credentials come as Google's
auth library finds them (GOOGLE_APPLICATION_CREDENTIALS: a service account
file whose token_uri is the mock's, or an external_account file whose
STS and impersonation URLs are), so the mock sees the library's own signed
JWT or token exchange. Prints one JSON line: the text, the function
calls, the usage and the finish reason the SDK read; any error the SDK
raised is the script's failure.
"""

import json
import os
import sys

from google.auth import identity_pool

from google import genai
from google.genai import types


def main() -> None:
    base, project, location, model = sys.argv[1:5]
    credentials = None
    path = os.environ["GOOGLE_APPLICATION_CREDENTIALS"]
    with open(path) as file:
        if json.load(file).get("type") == "external_account":
            # google-auth's own workload identity federation, loaded as
            # google.auth.default() loads it, less its project lookup at
            # Resource Manager (the internet).
            credentials = identity_pool.Credentials.from_file(
                path, scopes=["https://www.googleapis.com/auth/cloud-platform"]
            )
    client = genai.Client(
        vertexai=True,
        project=project,
        location=location,
        credentials=credentials,
        http_options=types.HttpOptions(base_url=base, api_version="v1"),
    )
    out = {"text": "", "calls": [], "usage": None, "finish": None}
    for chunk in client.models.generate_content_stream(model=model, contents="hi"):
        if chunk.usage_metadata is not None:
            out["usage"] = chunk.usage_metadata.model_dump(exclude_none=True, mode="json")
        for candidate in chunk.candidates or []:
            if candidate.finish_reason is not None:
                out["finish"] = candidate.finish_reason.value
            for part in (candidate.content.parts if candidate.content else None) or []:
                if part.function_call is not None:
                    out["calls"].append({"name": part.function_call.name, "args": part.function_call.args})
                elif part.text:
                    out["text"] += part.text
    print(json.dumps(out))


main()
