"""Benchmark: how fast a client's departure reaches the backend through the gateway, per phase.

Method: the gateway runs as a real subprocess (``python -m gateway serve``) with a one-backend
policy (pool ``main``, public model ``bench``) in front of one upstream at a time, each served
in this process on its own uvicorn thread (``loadtests.kit.serving.serve_app``). The ``queued``
phase has a gateway process of its own, whose backend has ``max_inflight: 1`` (so the pool's
concurrency limit is 1), and the other phases run on one with ``max_inflight: 1000``:

- ``fake``: ``loadtests.kit.fake_upstream``. It records the ``time.monotonic()`` of every
  cancellation it notices (``FakeLog.left_times``): Starlette's disconnect listener for
  streams, its own watcher for whole answers.
- ``sim``: the backend simulator (profile ``qwen2.5-1.5b-h100``, vLLM flavour, ``RealClock``
  at ``--sim-speed``). A client disconnect aborts the engine request; a coroutine run on the
  simulator's loop waits (``EngineDriver.wait_until``, event-driven) until the engine's abort
  counter reaches the expected value and returns ``time.monotonic()`` then.

Trials are sequential. Each one opens a raw TCP socket to the gateway, sends a hand-written
HTTP/1.1 ``POST /v1/chat/completions``, waits until the request is in the phase to measure,
records ``t0 = time.monotonic()`` and closes the socket. The delay is the time from ``t0``
until the upstream saw the departure (``queued``: until the gateway dropped the request from
its queue), bounded by ``--bound-s`` (later counts as not detected). Phases:

- ``queued``: the client leaves while its request waits in the gateway's admission queue. One
  long request holds the pool's only slot for the whole phase (fake: a stream of 1,000,000
  tokens 0.5 s apart; sim: a whole answer of ``max_model_len`` minus the prompt tokens, about
  68 s at speed 2, replaced between trials when less than ``ARRIVE_TIMEOUT_S + --bound-s + 1``
  s of it are left: it is left to finish, then a new one is sent). Each trial sends a small
  streaming request, reads the gateway's ``/metrics`` (one keep-alive connection, back to
  back) until ``gateway_queue_depth{pool="main"}`` (summed over lanes and priorities) is 1,
  closes the socket and reads ``/metrics`` again, back to back, until the depth is 0. The
  delay ends when the first answer showing 0 arrives: an upper bound, whose resolution is
  the time one scrape takes (reported). The upstream must never receive a queued request:
  its count of generation requests (fake: its request log; sim: requests reaching its HTTP
  routes, and requests ever submitted to its engine) is compared before the trial and at the
  start of the next one (after the last trial: 0.5 s later).
- ``first_token``: streaming, the client leaves before the first token. Fake: the request
  asks for a 30 s time to first token and the client leaves once the fake has it. Sim: the
  prompt has ``--sim-prompt-tokens`` tokens, so chunked prefill (8192 tokens per step) needs
  three steps before the first token; the client leaves when the first step ends (the first
  moment ``wait_until`` can tell the request is in the engine). Each trial checks that the
  engine had sampled no token when the abort was seen.
- ``streaming``: the client leaves after reading the first event with non-empty content.
  Fake: 1000 tokens 20 ms apart; sim: 2000 tokens (``ignore_eos``).
- ``non_streaming``: the client leaves while the whole answer is still being made. Fake:
  30 s to the answer; sim: 2000 tokens, the client leaves once the engine emitted the first.

After each sim trial of the other phases the engine must have no work left (token production
stopped). Every prompt starts with a unique nonce so the simulator's prefix cache never
shortens a prefill. Before the trials each gateway serves a few complete requests (warm-up, no
cancellations), so its ``gateway_cancellations_total{phase}``, read from ``/metrics`` at the
end (the queued gateway's before its holder is closed), should match the trial counts.

Reported per upstream and phase: trials, detected (count and %), p50/p99/max delay in ms, the
share of trials under 50 ms (the target: 100%), and the gateway's own count.

Parameters: ``--trials`` (per phase and upstream, ``queued`` included, default 500),
``--bound-s`` (2 s), ``--upstreams`` (``fake,sim``), ``--phases``, ``--sim-speed`` (2.0:
simulated seconds per real second), ``--sim-prompt-tokens`` (24000), ``--max-misses``
(undetected trials before a phase stops early), ``--json FILE``.

Modules: ``trial`` (the outcomes), ``upstreams`` and ``sim_target`` (the two upstreams),
``raw_client`` (the hand-written HTTP client), ``phases`` and ``queued`` (the trials),
``gateway_process``, ``report`` (rows, table, notes), ``cli``.
"""
