"""Policy schema, loader, compile step and errors: tables of good and bad policies."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from textwrap import dedent

import pytest

from gateway.policy.compile import compile_policy, policy_digest
from gateway.policy.loader import load_policy_file, load_policy_text, parse_policy
from gateway.schema import Engine, Timeouts
from gateway.schema.problems import FieldProblem, PolicyError
from tests.unit.gateway.helpers import MINIMAL_POLICY

# --- good policies -------------------------------------------------------------------------


@dataclass(frozen=True)
class Good:
    text: str
    pools: dict[str, list[str]]  # pool -> backend names, in order
    default_pool: str
    models: dict[str, tuple[str | None, bool]]  # public name -> (pool, auto)
    engines: dict[str, Engine] = field(default_factory=dict)
    timeouts: dict[str, Timeouts] = field(default_factory=dict)


GOOD: dict[str, Good] = {
    "minimal": Good(
        MINIMAL_POLICY,
        pools={"small": ["small-1"]},
        default_pool="small",
        models={"fast": ("small", False)},
        engines={"small-1": Engine.OPENAI},
        timeouts={"small": Timeouts()},
    ),
    "multiple pools, auto model, default from first backend": Good(
        """
        backends:
          - {name: big-1, url: "http://10.0.0.1:8000/", model: org/big, pool: big, engine: vllm}
          - {name: small-1, url: http://10.0.0.2:8000, model: org/small, pool: small, engine: tgi}
          - {name: small-2, url: https://small.example, model: org/small, pool: small}
        models:
          fast: {pool: small}
          smart: {pool: big, description: the large one}
          auto: {route: auto}
        """,
        pools={"big": ["big-1"], "small": ["small-1", "small-2"]},
        default_pool="big",
        models={"fast": ("small", False), "smart": ("big", False), "auto": (None, True)},
        engines={"big-1": Engine.VLLM, "small-1": Engine.TGI, "small-2": Engine.OPENAI},
    ),
    "explicit pools with timeouts and routing.default_pool": Good(
        """
        version: 1
        backends:
          - {name: a, url: http://127.0.0.1:8001, model: m, pool: small, max_inflight: 1}
          - {name: b, url: http://127.0.0.1:8002, model: m, pool: big, engine: openai}
        models:
          any: {route: auto}
        pools:
          big:
            timeouts: {connect_s: 1.5, first_token_s: 30, idle_s: 10, total_s: 120}
        routing:
          default_pool: big
        health: {interval_s: 0.5, failures_to_eject: 3, successes_to_restore: 2}
        server: {max_body_bytes: 2048, reload_poll_s: 0.25}
        """,
        pools={"small": ["a"], "big": ["b"]},
        default_pool="big",
        models={"any": (None, True)},
        engines={"a": Engine.OPENAI, "b": Engine.OPENAI},
        timeouts={
            "big": Timeouts(connect_s=1.5, first_token_s=30, idle_s=10, total_s=120),
            "small": Timeouts(),
        },
    ),
}


@pytest.mark.parametrize("case", GOOD.values(), ids=GOOD.keys())
def test_good_policy_compiles(case: Good) -> None:
    compiled = load_policy_text(dedent(case.text))

    assert {name: [b.name for b in p.backends] for name, p in compiled.pools.items()} == case.pools
    assert compiled.default_pool == case.default_pool
    assert {n: (r.pool, r.auto) for n, r in compiled.models.items()} == case.models
    assert compiled.model_names() == sorted(case.models)
    for name, engine in case.engines.items():
        assert next(b for b in compiled.backends if b.name == name).engine is engine
    for pool, timeouts in case.timeouts.items():
        assert compiled.pools[pool].timeouts == timeouts
    for spec in compiled.pools.values():
        assert all(b.pool == spec.name for b in spec.backends)
    assert len(compiled.digest) == 64


def test_compiled_backends_carry_their_settings() -> None:
    compiled = load_policy_text(
        dedent(GOOD["explicit pools with timeouts and routing.default_pool"].text)
    )
    a = compiled.pools["small"].backends[0]
    assert (a.url, a.served_model, a.max_inflight) == ("http://127.0.0.1:8001", "m", 1)
    assert compiled.pools["big"].backends[0].max_inflight is None  # the default: no cap
    assert compiled.pools["small"].capacity == 1
    assert compiled.source.health.failures_to_eject == 3


TWO_BACKENDS = MINIMAL_POLICY.replace(
    "models:",
    """  - name: small-2
    url: http://127.0.0.1:8002
    model: org/small
    pool: small
    extra_routes: [tokenize, score]
models:""",
)


@pytest.mark.parametrize(
    ("endpoint", "first", "second"),
    [
        ("chat", True, True),
        ("responses", True, True),
        ("embeddings", True, True),
        ("tokenize", False, True),
        ("score", False, True),
        ("rerank", False, False),
    ],
)
def test_extra_routes_say_which_backends_serve_vllm_routes(
    endpoint: str, first: bool, second: bool
) -> None:
    pool = load_policy_text(TWO_BACKENDS).pools["small"]
    assert [b.serves(endpoint) for b in pool.backends] == [first, second]
    assert pool.serves(endpoint) is (first or second)


def test_unknown_extra_route_is_refused() -> None:
    text = TWO_BACKENDS.replace("[tokenize, score]", "[tokenize, generate]")
    with pytest.raises(PolicyError) as refused:
        load_policy_text(text)
    assert "extra_routes" in str(refused.value)


def test_url_trailing_slash_is_stripped() -> None:
    compiled = load_policy_text(MINIMAL_POLICY.replace("8001", "8001/v1/"))
    assert compiled.backends[0].url == "http://127.0.0.1:8001/v1"


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [("zeta", "alpha", "zeta"), ("alpha", "zeta", "alpha")],
)
def test_default_pool_defaults_to_first_backends_pool(
    first: str, second: str, expected: str
) -> None:
    text = f"""\
backends:
  - {{name: one, url: http://127.0.0.1:1, model: m, pool: {first}}}
  - {{name: two, url: http://127.0.0.1:2, model: m, pool: {second}}}
models:
  m: {{route: auto}}
"""
    assert load_policy_text(text).default_pool == expected


# --- bad policies --------------------------------------------------------------------------

BACKEND = "{name: a, url: http://127.0.0.1:8001, model: m, pool: small}"


def _with_backend(backend: str, models: str = "{fast: {pool: small}}") -> str:
    return f"backends:\n  - {backend}\nmodels: {models}\n"


# id -> (yaml text, [(exact problem path, reason fragment), ...]) — the full list of problems.
BAD: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "unknown top-level key": (
        MINIMAL_POLICY + "colour: blue\n",
        [("colour", "unknown key")],
    ),
    "unknown backend key": (
        _with_backend("{name: a, url: http://h:1, model: m, pool: small, foo: 1}"),
        [("backends[0].foo", "unknown key")],
    ),
    "unknown nested key in pools.timeouts": (
        MINIMAL_POLICY + "pools: {small: {timeouts: {connect: 1}}}\n",
        [("pools.small.timeouts.connect", "unknown key")],
    ),
    "max_inflight not an integer": (
        _with_backend("{name: a, url: http://h:1, model: m, pool: small, max_inflight: many}"),
        [("backends[0].max_inflight", "valid integer")],
    ),
    "max_inflight zero": (
        _with_backend("{name: a, url: http://h:1, model: m, pool: small, max_inflight: 0}"),
        [("backends[0].max_inflight", "greater than or equal to 1")],
    ),
    "backends is a mapping": (
        "backends: {a: 1}\nmodels: {fast: {pool: small}}\n",
        [("backends", "valid list")],
    ),
    "no backends": (
        "backends: []\nmodels: {fast: {pool: small}}\n",
        [("backends", "at least 1")],
    ),
    "models is a list": (
        f"backends:\n  - {BACKEND}\nmodels: [fast]\n",
        [("models", "valid dictionary")],
    ),
    "unknown engine": (
        _with_backend("{name: a, url: http://h:1, model: m, pool: small, engine: triton}"),
        [("backends[0].engine", "'vllm', 'tgi', 'openai' or 'llamacpp'")],
    ),
    "wrong version": (
        "version: 2\n" + MINIMAL_POLICY,
        [("version", "1")],
    ),
    "health failures_to_eject zero": (
        MINIMAL_POLICY + "health: {failures_to_eject: 0}\n",
        [("health.failures_to_eject", "greater than or equal to 1")],
    ),
    "negative timeout": (
        MINIMAL_POLICY + "pools: {small: {timeouts: {total_s: -1}}}\n",
        [("pools.small.timeouts.total_s", "greater than 0")],
    ),
    "missing backend fields": (
        _with_backend("{name: a, url: http://h:1}"),
        [("backends[0].model", "required"), ("backends[0].pool", "required")],
    ),
    "backend name with a space": (
        _with_backend("{name: 'a b', url: http://h:1, model: m, pool: small}"),
        [("backends[0].name", "pattern")],
    ),
    "url without scheme": (
        _with_backend("{name: a, url: '127.0.0.1:8001', model: m, pool: small}"),
        [("backends[0].url", "must start with http:// or https://")],
    ),
    "url with other scheme": (
        _with_backend("{name: a, url: 'ftp://h', model: m, pool: small}"),
        [("backends[0].url", "must start with http:// or https://")],
    ),
    "url without host": (
        _with_backend("{name: a, url: 'http://', model: m, pool: small}"),
        [("backends[0].url", "must name a host")],
    ),
    "url with empty host and a path": (
        _with_backend("{name: a, url: 'https:///v1', model: m, pool: small}"),
        [("backends[0].url", "must name a host")],
    ),
    "url with a query": (
        _with_backend("{name: a, url: 'https://h/v1?api-version=1', model: m, pool: small}"),
        [("backends[0].url", "must not carry a query or fragment")],
    ),
    "tls on a plain http url": (
        _with_backend("{name: a, url: 'http://h', model: m, pool: small, tls: {verify: false}}"),
        [("backends[0]", "tls applies to https:// URLs only")],
    ),
    "tls client_key without client_cert": (
        _with_backend("{name: a, url: 'https://h', model: m, pool: small, tls: {client_key: k}}"),
        [("backends[0].tls", "client_key needs client_cert")],
    ),
    "tls ca_file with verify off": (
        _with_backend(
            "{name: a, url: 'https://h', model: m, pool: small, tls: {verify: false, ca_file: c}}"
        ),
        [("backends[0].tls", "ca_file is unused when verify is false")],
    ),
    "unknown api key header": (
        _with_backend("{name: a, url: 'https://h', model: m, pool: small, api_key_header: x}"),
        [("backends[0].api_key_header", "Input should be 'authorization' or 'api-key'")],
    ),
    "model with both pool and route": (
        _with_backend(BACKEND, "{fast: {pool: small, route: auto}}"),
        [("models.fast", "exactly one of 'pool' or 'route'")],
    ),
    "model with neither pool nor route": (
        _with_backend(BACKEND, "{fast: {description: nothing}}"),
        [("models.fast", "exactly one of 'pool' or 'route'")],
    ),
    "model with unknown route": (
        _with_backend(BACKEND, "{fast: {route: manual}}"),
        [("models.fast.route", "'auto'")],
    ),
    "model names unknown pool": (
        _with_backend(BACKEND, "{fast: {pool: huge}}"),
        [("models.fast.pool", "unknown pool 'huge' (known: ['small'])")],
    ),
    "declared pool without backends": (
        MINIMAL_POLICY + "pools: {big: {}}\n",
        [("pools.big", "pool has no backends")],
    ),
    "duplicate backend name": (
        """\
backends:
  - {name: a, url: http://127.0.0.1:1, model: m, pool: small}
  - {name: a, url: http://127.0.0.1:2, model: m, pool: small}
models: {fast: {pool: small}}
""",
        [("backends[1].name", "duplicate name 'a' (also backends[0])")],
    ),
    "duplicate backend url": (
        """\
backends:
  - {name: a, url: http://127.0.0.1:1, model: m, pool: small}
  - {name: b, url: http://127.0.0.1:2, model: m, pool: small}
  - {name: c, url: http://127.0.0.1:1/, model: m, pool: big}
models: {fast: {pool: small}}
""",
        [("backends[2].url", "duplicate url 'http://127.0.0.1:1' (also backends[0])")],
    ),
    "unknown routing.default_pool": (
        MINIMAL_POLICY + "routing: {default_pool: big}\n",
        [("routing.default_pool", "unknown pool 'big'")],
    ),
    "cross-reference problems are all reported": (
        MINIMAL_POLICY.replace("pool: small\n", "pool: big\n", 1)
        + "pools: {small: {}}\nrouting: {default_pool: nope}\n",
        [
            ("models.fast.pool", "unknown pool 'small'"),
            ("pools.small", "pool has no backends"),
            ("routing.default_pool", "unknown pool 'nope'"),
        ],
    ),
    "duplicate YAML key under models": (
        f"backends:\n  - {BACKEND}\nmodels:\n  fast: {{pool: small}}\n  fast: {{route: auto}}\n",
        [("", "duplicate key 'fast'")],
    ),
    "duplicate YAML key at top level": (
        MINIMAL_POLICY + "models: {other: {pool: small}}\n",
        [("", "duplicate key 'models'")],
    ),
    "rewrite.sort_tools names its replacement": (
        MINIMAL_POLICY + "rewrite: {sort_tools: true}\n",
        [("rewrite", "sort_tools was replaced by transforms")],
    ),
    "unknown rewrite transform": (
        MINIMAL_POLICY + "rewrite: {transforms: [user_whitespace, sort_everything]}\n",
        [("rewrite.transforms[1]", "tool_schema_key_order")],
    ),
    "YAML list": ("- a\n- b\n", [("", "must be a YAML mapping")]),
    "YAML scalar": ("just text\n", [("", "must be a YAML mapping")]),
    "empty file": ("", [("", "must be a YAML mapping")]),
    "invalid YAML syntax": ("backends: [\nmodels: {\n", [("", "not valid YAML")]),
    "unhashable YAML key": ("? [a, b]\n: 1\n", [("", "not valid YAML")]),
}


@pytest.mark.parametrize(("text", "expected"), BAD.values(), ids=BAD.keys())
def test_bad_policy_is_refused_with_exact_paths(text: str, expected: list[tuple[str, str]]) -> None:
    with pytest.raises(PolicyError) as info:
        load_policy_text(text, source="bad.yaml")

    problems = info.value.problems
    assert [p.path for p in problems] == [path for path, _ in expected], problems
    for problem, (_, fragment) in zip(problems, expected, strict=True):
        assert fragment in problem.reason, problem
    assert info.value.source == "bad.yaml"


def test_policy_error_render_names_the_source_file(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(_with_backend("{name: a, url: http://h:1, model: m, pool: small, foo: 1}"))

    with pytest.raises(PolicyError) as info:
        load_policy_file(path)

    rendered = info.value.render()
    assert rendered.splitlines() == [f"{path}: invalid policy", "  backends[0].foo: unknown key"]
    assert str(info.value) == rendered


def test_missing_file_is_a_policy_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(PolicyError) as info:
        load_policy_file(path)
    assert info.value.source == str(path)
    assert "cannot read" in info.value.problems[0].reason


@pytest.mark.parametrize(
    ("problem", "text"),
    [
        (FieldProblem("a.b", "bad"), "a.b: bad"),
        (FieldProblem("", "not valid YAML"), "not valid YAML"),
    ],
)
def test_field_problem_str(problem: FieldProblem, text: str) -> None:
    assert str(problem) == text


# --- digest --------------------------------------------------------------------------------


def test_digest_is_stable_for_the_same_content() -> None:
    first = load_policy_text(MINIMAL_POLICY)
    second = load_policy_text(MINIMAL_POLICY)
    assert first.digest == second.digest
    assert first.digest == policy_digest(parse_policy(MINIMAL_POLICY))


def test_digest_ignores_formatting_comments_and_explicit_defaults() -> None:
    reformatted = """\
# the same policy, written differently
models: {fast: {pool: small}}
backends:
  - {pool: small, model: org/small, url: "http://127.0.0.1:8001/", name: small-1,
     engine: openai, max_inflight: null}
"""
    assert load_policy_text(reformatted).digest == load_policy_text(MINIMAL_POLICY).digest


def test_digest_ignores_the_order_of_mapping_keys() -> None:
    head = "backends:\n  - {name: a, url: http://127.0.0.1:1, model: m, pool: small}\n"
    one = head + "models:\n  fast: {pool: small}\n  auto: {route: auto}\n"
    two = head + "models:\n  auto: {route: auto}\n  fast: {pool: small}\n"
    assert load_policy_text(one).digest == load_policy_text(two).digest


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("    pool: small\nmodels", "    pool: small\n    max_inflight: 3\nmodels"),
        ("org/small", "org/other"),
        ("8001", "8002"),
        ("fast:", "quick:"),
        ("  fast:\n    pool: small\n", "  fast:\n    route: auto\n"),
    ],
)
def test_digest_changes_when_content_changes(old: str, new: str) -> None:
    changed = MINIMAL_POLICY.replace(old, new)
    assert changed != MINIMAL_POLICY
    assert load_policy_text(changed).digest != load_policy_text(MINIMAL_POLICY).digest


def test_compile_policy_uses_the_given_source_in_errors() -> None:
    parsed = parse_policy(MINIMAL_POLICY + "routing: {default_pool: big}\n")
    with pytest.raises(PolicyError) as info:
        compile_policy(parsed, source="from-test")
    assert info.value.render().startswith("from-test: invalid policy\n")


@pytest.mark.parametrize(
    ("declared", "engine", "resolved"),
    [
        ("", "vllm", "continue_final_message"),
        ("", "llamacpp", "assistant_prefill"),
        ("", "tgi", "none"),
        ("", "openai", "none"),  # a generic server: none unless declared
        (", continue_with: continue_final_message", "openai", "continue_final_message"),
        (", continue_with: none", "vllm", "none"),
    ],
)
def test_how_a_backend_continues_a_stream(declared: str, engine: str, resolved: str) -> None:
    text = (
        f"backends:\n  - {{name: a, url: http://h:1, model: m, pool: p, engine: {engine}"
        f"{declared}}}\nmodels:\n  m: {{pool: p}}\n"
    )
    assert load_policy_text(text).pools["p"].backends[0].continue_with == resolved
