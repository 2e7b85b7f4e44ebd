import pytest

from gateway.security.api_keys import (
    KeyFormatError,
    KeyRing,
    bearer_token,
    check_hash,
    hash_key,
    new_key,
)


def test_a_new_key_is_long_random_and_hashes_to_the_stored_format() -> None:
    a, b = new_key(), new_key()
    assert a != b
    assert a.startswith("gw-")
    assert len(a) >= 40
    stored = hash_key(a)
    assert stored.startswith("sha256:")
    assert len(stored) == 7 + 64
    assert check_hash(stored) == stored[7:]
    assert a not in stored


def test_short_hand_made_keys_are_refused() -> None:
    with pytest.raises(KeyFormatError):
        hash_key("password123")


@pytest.mark.parametrize("bad", ["md5:abc", "sha256:XYZ", "sha256:" + "0" * 63, "plain-key"])
def test_malformed_stored_hashes_are_refused(bad: str) -> None:
    with pytest.raises(KeyFormatError):
        check_hash(bad)


def test_keyring_finds_the_owner_of_a_key_and_nobody_for_others() -> None:
    a, b = new_key(), new_key()
    ring = KeyRing.build([(hash_key(a), "alpha"), (hash_key(b), "bravo")])
    assert ring.owner_of(a) == "alpha"
    assert ring.owner_of(b) == "bravo"
    assert ring.owner_of(a + "x") is None
    assert ring.owner_of("") is None
    assert ring
    assert not KeyRing.empty()


@pytest.mark.parametrize(
    ("header", "token"),
    [
        (None, None),
        ("Bearer abc", "abc"),
        ("bearer   abc  ", "abc"),
        ("Basic abc", None),
        ("Bearer", None),
        ("Bearer    ", None),
        ("abc", None),
    ],
)
def test_bearer_token(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


def test_hash_key_command_prints_a_new_key_and_its_hash(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from gateway.commands.cli import main

    assert main(["hash-key"]) == 0
    lines = capsys.readouterr().out.splitlines()
    key = lines[0].split()[1]
    assert lines[1].split()[1] == hash_key(key)
    monkeypatch.setattr("sys.stdin", io.StringIO(key + "\n"))
    assert main(["hash-key", "--stdin"]) == 0
    out = capsys.readouterr().out
    assert key not in out  # a key given on stdin is not echoed
    assert hash_key(key) in out
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main(["hash-key", "--stdin"]) == 1
