"""A llama.cpp server killed mid-stream, and what the gateway's continuation (issue 32)
relies on, checked on the servers themselves: the client's stream breaks with the text so
far, without ``[DONE]``; a second server given that text as a final assistant message
(``continue_final_message``) goes on with the rest, so that at temperature 0 the two parts
are the uninterrupted answer. The same through the gateway: test_llamacpp_continuation.py.
"""

from __future__ import annotations

import signal

import httpx2 as httpx
import pytest

from loadtests.real.launch import Process
from loadtests.real.mid_stream import continuation_body, greedy_body, stream_text

# Greedy decoding is exact only up to the arithmetic: llama.cpp on this CPU computes a token's
# logits slightly differently when the token was prefilled in a batch (the continuation's
# partial text) than when it was decoded alone (the uninterrupted run), and differently again
# when part of the prompt comes from its prompt cache. Where two tokens nearly tie, that
# flips the choice: "Write the numbers from one to thirty in words." diverged after 3 of 13
# cut points without the cache (all at one near tie) and the prompt below after 6 of 39 with
# it; without the cache (``cache_prompt: false``) the prompt below continued exactly at
# every one of 13 cut points (2, 5, ..., 38 tokens).
BODY = greedy_body(
    [{"role": "user", "content": "List the days of the week, then the months of the year."}],
    max_tokens=40,
    ignore_eos=True,
    cache_prompt=False,
)
KILL_AFTER = 8
# Two servers started, three streams: past the default 120 s at a load average of 9.
pytestmark = pytest.mark.timeout(600)


async def test_a_killed_server_breaks_the_stream_and_another_continues_it(
    pair: tuple[Process, Process], http: httpx.AsyncClient
) -> None:
    first, second = pair
    whole = await stream_text(http, second.url, BODY)
    assert whole.ended == "done"
    assert len(whole.pieces) == BODY["max_tokens"]  # one token per chunk

    cut = await stream_text(http, first.url, BODY, kill_after=KILL_AFTER, proc=first.proc)
    assert cut.killed_at == KILL_AFTER
    assert cut.ended.startswith("broken"), cut.ended
    assert first.proc.wait(timeout=10) == -signal.SIGKILL
    # What came before the death is the start of the uninterrupted answer, and not all of it.
    assert whole.text.startswith(cut.text)
    assert KILL_AFTER <= len(cut.pieces) < len(whole.pieces)

    rest = await stream_text(http, second.url, continuation_body(BODY, cut.text, len(cut.pieces)))
    assert rest.ended == "done"
    assert cut.text + rest.text == whole.text
