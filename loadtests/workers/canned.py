"""The cheap ends of the workers benchmark: nginx answering every chat request with one canned
event stream, and wrk's Lua script that posts a streaming request and reports its figures.

Both are C programs, so the gateway (Python) is what the machine's cores are spent on: nginx
(one worker process) returns the same ``tokens``-event SSE body, a file in the page cache
(``write_canned``), for every POST, and wrk (one thread) keeps ``c`` connections busy.
``/v1/models`` answers the gateway's health probe.
"""

from __future__ import annotations

import json
from pathlib import Path

MODEL = "fake-model"


def sse_body(tokens: int) -> str:
    """``tokens`` chat chunks, a usage chunk and ``[DONE]``, as the upstream streams them."""
    events = []
    for i in range(tokens):
        finish = "length" if i == tokens - 1 else None
        chunk = {
            "id": "c-1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": MODEL,
            "choices": [{"index": 0, "delta": {"content": f" tok{i}"}, "finish_reason": finish}],
        }
        events.append("data: " + json.dumps(chunk, separators=(",", ":")))
    usage = {"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": 5 + tokens}
    tail = {"id": "c-1", "object": "chat.completion.chunk", "created": 0, "model": MODEL}
    events.append("data: " + json.dumps({**tail, "choices": [], "usage": usage}))
    events.append("data: [DONE]")
    return "".join(event + "\n\n" for event in events)


def _nginx_quoted(text: str) -> str:
    # Inside an nginx single-quoted string: backslash escapes, \n for a newline.
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def write_canned(root: Path, tokens: int) -> None:
    (root / "canned.sse").write_text(sse_body(tokens))


def nginx_conf(root: Path, port: int) -> str:
    models = json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]})
    temp = "\n".join(
        f"    {kind}_temp_path {root / 'tmp' / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""daemon off;
worker_processes 1;
pid {root / "nginx.pid"};
error_log {root / "nginx-error.log"} warn;
events {{
    worker_connections 4096;
}}
http {{
    access_log off;
{temp}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        keepalive_requests 1000000;
        location = /v1/models {{
            default_type application/json;
            return 200 {_nginx_quoted(models)};
        }}
        location = /v1/chat/completions {{
            # A POST to a file is refused (405): answered by the file instead, as a GET.
            default_type text/event-stream;
            root {root};
            try_files /canned.sse =404;
            error_page 405 =200 /canned.sse;
        }}
        location = /canned.sse {{
            internal;
            default_type text/event-stream;
            root {root};
        }}
    }}
}}
"""


def temp_dirs(root: Path) -> list[Path]:
    return [root / "tmp" / kind for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")]


REQUEST = {
    "model": "bench",
    "messages": [{"role": "user", "content": "Say something."}],
    "stream": True,
}


def wrk_script() -> str:
    """POST ``REQUEST``; at the end print one JSON line of the run's figures."""
    body = json.dumps(REQUEST).replace("\\", "\\\\").replace('"', '\\"')
    return f"""wrk.method = "POST"
wrk.body = "{body}"
wrk.headers["Content-Type"] = "application/json"
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK {{"requests": %d, "duration_us": %d, "bytes": %d, "connect": %d, "read": %d, '
    .. '"write": %d, "status": %d, "timeout": %d, "p50_us": %d, "p99_us": %d}}\\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write,
    e.status, e.timeout, latency:percentile(50), latency:percentile(99)))
end
"""
