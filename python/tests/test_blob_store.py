"""The folder blob store keeps src/store/fs-blob-store.ts's layout and guarantees."""
import hashlib
import json

import pytest

from durable_rl_torch.blob_store import BlobCorruptError, BlobNotFoundError, BlobRef, FsBlobStore


def test_layout_is_the_typescript_stores(tmp_path):
    store = FsBlobStore(tmp_path)
    ref = store.put(b"hello", "text")
    sha = hashlib.sha256(b"hello").hexdigest()
    assert ref == BlobRef(sha, 5, "text")
    assert (tmp_path / "blobs" / sha[:2] / sha[2:]).read_bytes() == b"hello"
    store.set_name("runs/a/x", ref)
    assert json.loads((tmp_path / "names" / "runs" / "a" / "x.json").read_text()) == {"sha256": sha, "bytes": 5, "kind": "text"}


def test_a_name_is_created_once_and_keeps_its_first_value(tmp_path):
    store = FsBlobStore(tmp_path)
    a, b = store.put(b"a", "k"), store.put(b"b", "k")
    assert store.name_if_absent("n/1", a) == a
    assert store.name_if_absent("n/1", b) == a
    store.set_name("n/1", b)
    assert store.get_name("n/1") == b
    assert store.get_name("n/2") is None
    assert store.list_names("n/") == ["n/1"]


def test_corrupt_and_missing_blobs_are_named(tmp_path):
    store = FsBlobStore(tmp_path)
    ref = store.put(b"data", "k")
    (tmp_path / "blobs" / ref.sha256[:2] / ref.sha256[2:]).write_bytes(b"dat!")
    with pytest.raises(BlobCorruptError):
        store.get(ref)
    with pytest.raises(BlobNotFoundError):
        store.get(BlobRef("0" * 64, 1, "k"))
    with pytest.raises(ValueError):
        store.set_name("../escape", ref)

