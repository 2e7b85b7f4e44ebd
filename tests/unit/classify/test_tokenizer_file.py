"""Exact counts from a tokenizer.json built in the test (no downloads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.classify.estimate import EstimateCounter
from gateway.classify.tokenizer_file import (
    TokenizerJsonCounter,
    TokenizerUnavailable,
    load_token_counter,
)
from gateway.classify.tokens import ChatOverhead

tokenizers = pytest.importorskip("tokenizers")


def word_level_file(tmp_path: Path) -> Path:
    """A WordLevel tokenizer: one token per word or punctuation mark."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, "hello": 1, "world": 2, "!": 3, "how": 4, "are": 5, "you": 6, "?": 7}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    return path


def bpe_file(tmp_path: Path) -> Path:
    """A byte-level BPE trained in memory on a few sentences."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    corpus = ["the gateway routes requests to the small pool", "the large pool is slower"] * 50
    tokenizer.train_from_iterator(corpus, trainer)
    path = tmp_path / "bpe.json"
    tokenizer.save(str(path))
    return path


def test_word_level_counts_are_exact(tmp_path: Path) -> None:
    counter = load_token_counter(word_level_file(tmp_path))
    assert isinstance(counter, TokenizerJsonCounter)
    assert counter.exact
    assert counter.count("hello world!") == 3
    assert counter.count("how are you? zebra") == 5  # unknown word -> one [UNK]
    assert counter.count("") == 0


def test_messages_add_the_template_overhead(tmp_path: Path) -> None:
    overhead = ChatOverhead(per_message=4, reply_priming=3)
    counter = load_token_counter(word_level_file(tmp_path), overhead)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "hello world!"},
        {"role": "assistant", "content": [{"type": "text", "text": "how are you?"}]},
    ]
    assert counter.count_messages(messages) == 3 + 4 + 2 * 4 + 3


def test_trained_bpe_merges_frequent_words(tmp_path: Path) -> None:
    counter = load_token_counter(bpe_file(tmp_path))
    frequent = counter.count("the gateway routes requests")
    rare = counter.count("zyx qwv jkp")
    assert 1 <= frequent < len("the gateway routes requests")
    assert rare > frequent  # unseen letters stay as single bytes


def test_special_tokens_are_not_added(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, processors

    path = word_level_file(tmp_path)
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[UNK] $A", special_tokens=[("[UNK]", 0)]
    )
    assert TokenizerJsonCounter(tokenizer).count("hello") == 1


def test_no_path_gives_the_estimate() -> None:
    counter = load_token_counter(None)
    assert isinstance(counter, EstimateCounter)
    assert not counter.exact


def test_bad_files_raise_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TokenizerUnavailable, match="cannot load"):
        load_token_counter(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(TokenizerUnavailable, match=r"broken\.json"):
        load_token_counter(broken)
