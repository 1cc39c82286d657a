"""The claim-check blob store, as src/store/*.ts lays it out, so both languages read each other's blobs.

Layout under a folder (or an S3 bucket/prefix):
  blobs/<sha256[0:2]>/<sha256[2:]>   the bytes, content-addressed
  names/<name>.json                  a BlobRef as JSON ({"sha256", "bytes", "kind"})

Blobs are written once per content; a name is created only if absent (name_if_absent), which is what
makes "write the checkpoint of step N" happen exactly once across retried activities. Results are named
through named_results.py, which keys each name by what it was made from.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

NAME_RE = re.compile(r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")
SHA_RE = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class BlobRef:
    sha256: str
    bytes: int
    kind: str

    def to_json(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "bytes": self.bytes, "kind": self.kind}

    @staticmethod
    def from_json(v: dict[str, Any]) -> "BlobRef":
        return BlobRef(sha256=str(v["sha256"]), bytes=int(v["bytes"]), kind=str(v["kind"]))


class BlobNotFoundError(Exception):
    def __init__(self, ref: BlobRef):
        super().__init__(f"blob {ref.kind} {ref.sha256} ({ref.bytes} bytes) is not in the store")
        self.ref = ref


class BlobCorruptError(Exception):
    def __init__(self, ref: BlobRef, actual: str):
        super().__init__(f"blob {ref.kind} {ref.sha256} has content hashing to {actual}")
        self.ref = ref


def check_name(name: str) -> str:
    if not NAME_RE.match(name) or any(p in (".", "..") for p in name.split("/")):
        raise ValueError(f'invalid blob name {json.dumps(name)}: use path segments of letters, digits, ".", "_", "-"')
    return name


def check_sha256(sha: str) -> str:
    if not SHA_RE.match(sha):
        raise ValueError(f"not a sha256 hex digest: {json.dumps(sha)}")
    return sha


class BlobStore(Protocol):
    def put(self, data: bytes, kind: str) -> BlobRef: ...
    def get(self, ref: BlobRef) -> bytes: ...
    def has(self, ref: BlobRef) -> bool: ...
    def name_if_absent(self, name: str, ref: BlobRef) -> BlobRef: ...
    def set_name(self, name: str, ref: BlobRef) -> None: ...
    def get_name(self, name: str) -> BlobRef | None: ...
    def list_names(self, prefix: str) -> list[str]: ...


def _verified(ref: BlobRef, data: bytes) -> bytes:
    actual = hashlib.sha256(data).hexdigest()
    if actual != ref.sha256:
        raise BlobCorruptError(ref, actual)
    return data


class FsBlobStore:
    """src/store/fs-blob-store.ts: temp file, then link (create-if-absent) or rename (replace) into place."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)

    def _blob_path(self, sha: str) -> Path:
        check_sha256(sha)
        return self.root / "blobs" / sha[:2] / sha[2:]

    def _name_path(self, name: str) -> Path:
        check_name(name)
        return self.root / "names" / f"{name}.json"

    def _write(self, file: Path, data: bytes, mode: str) -> bool:
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_name(f"{file.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
        tmp.write_bytes(data)
        try:
            if mode == "rename":
                os.replace(tmp, file)
                return True
            try:
                os.link(tmp, file)
                return True
            except FileExistsError:
                return False
        finally:
            if mode == "link":
                tmp.unlink(missing_ok=True)

    def put(self, data: bytes, kind: str) -> BlobRef:
        ref = BlobRef(hashlib.sha256(data).hexdigest(), len(data), kind)
        file = self._blob_path(ref.sha256)
        if not file.exists():
            self._write(file, data, "link")
        return ref

    def get(self, ref: BlobRef) -> bytes:
        try:
            data = self._blob_path(ref.sha256).read_bytes()
        except FileNotFoundError:
            raise BlobNotFoundError(ref) from None
        return _verified(ref, data)

    def has(self, ref: BlobRef) -> bool:
        return self._blob_path(ref.sha256).exists()

    def name_if_absent(self, name: str, ref: BlobRef) -> BlobRef:
        if self._write(self._name_path(name), json.dumps(ref.to_json()).encode(), "link"):
            return ref
        held = self.get_name(name)
        if held is None:
            raise RuntimeError(f"name {name} vanished while being read")
        return held

    def set_name(self, name: str, ref: BlobRef) -> None:
        self._write(self._name_path(name), json.dumps(ref.to_json()).encode(), "rename")

    def get_name(self, name: str) -> BlobRef | None:
        try:
            return BlobRef.from_json(json.loads(self._name_path(name).read_text("utf8")))
        except FileNotFoundError:
            return None

    def list_names(self, prefix: str) -> list[str]:
        base = self.root / "names"
        folder = prefix[: prefix.rfind("/") + 1]
        if folder:
            check_name(folder[:-1])
        start = base.joinpath(*[p for p in folder.split("/") if p])
        out: list[str] = []
        if start.is_dir():
            for dirpath, _dirs, files in os.walk(start):
                for f in files:
                    if f.endswith(".json"):
                        rel = Path(dirpath, f).relative_to(base).as_posix()[: -len(".json")]
                        out.append(rel)
        return sorted(n for n in out if n.startswith(prefix))


class S3BlobStore:
    """src/store/s3-blob-store.ts: content-addressed PutObject with a SHA-256 checksum, names by If-None-Match."""

    def __init__(self, bucket: str, prefix: str = "", endpoint: str | None = None, region: str = "us-east-1", path_style: bool = True):
        import boto3
        from botocore.config import Config

        self.bucket = bucket
        self.base = f"{prefix}/" if prefix else ""
        cfg = Config(s3={"addressing_style": "path" if path_style else "virtual"}, retries={"max_attempts": 5, "mode": "standard"})
        self.client = boto3.client("s3", endpoint_url=endpoint, region_name=region, config=cfg)

    def _blob_key(self, sha: str) -> str:
        check_sha256(sha)
        return f"{self.base}blobs/{sha[:2]}/{sha[2:]}"

    def _name_key(self, name: str) -> str:
        return f"{self.base}names/{check_name(name)}.json"

    def _status(self, err: Exception) -> int:
        return int(getattr(err, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode", 0))

    def put(self, data: bytes, kind: str) -> BlobRef:
        sha = hashlib.sha256(data).hexdigest()
        ref = BlobRef(sha, len(data), kind)
        if self.has(ref):
            return ref
        try:
            self.client.put_object(
                Bucket=self.bucket, Key=self._blob_key(sha), Body=data, ChecksumSHA256=base64.b64encode(bytes.fromhex(sha)).decode(), IfNoneMatch="*"
            )
        except Exception as err:  # 412: the same content was stored meanwhile
            if self._status(err) != 412:
                raise
        return ref

    def get(self, ref: BlobRef) -> bytes:
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self._blob_key(ref.sha256))["Body"].read()
        except Exception as err:
            if self._status(err) == 404:
                raise BlobNotFoundError(ref) from None
            raise
        return _verified(ref, body)

    def has(self, ref: BlobRef) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=self._blob_key(ref.sha256))
            return True
        except Exception as err:
            if self._status(err) == 404:
                return False
            raise

    def name_if_absent(self, name: str, ref: BlobRef) -> BlobRef:
        try:
            self.client.put_object(Bucket=self.bucket, Key=self._name_key(name), Body=json.dumps(ref.to_json()).encode(), IfNoneMatch="*")
            return ref
        except Exception as err:
            if self._status(err) not in (409, 412):
                raise
        held = self.get_name(name)
        if held is None:
            raise RuntimeError(f"name {name} vanished while being read")
        return held

    def set_name(self, name: str, ref: BlobRef) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._name_key(name), Body=json.dumps(ref.to_json()).encode())

    def get_name(self, name: str) -> BlobRef | None:
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self._name_key(name))["Body"].read()
        except Exception as err:
            if self._status(err) == 404:
                return None
            raise
        return BlobRef.from_json(json.loads(body))

    def list_names(self, prefix: str) -> list[str]:
        out: list[str] = []
        start = f"{self.base}names/{prefix}"
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=start):
            for obj in page.get("Contents", []):
                key: str = obj["Key"]
                if key.endswith(".json"):
                    out.append(key[len(f"{self.base}names/") : -len(".json")])
        return sorted(out)


def put_json(store: BlobStore, value: Any, kind: str) -> BlobRef:
    # JSON.stringify's compact form (the TypeScript side reads it with JSON.parse).
    return store.put(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf8"), kind)


def get_json(store: BlobStore, ref: BlobRef) -> Any:
    return json.loads(store.get(ref))


def store_from_spec(spec: str, endpoint: str | None = None, region: str | None = None, path_style: bool | None = None) -> BlobStore:
    """A folder or s3://bucket[/prefix], as src/store/store-spec.ts reads DURABLE_RL_STORE."""
    if spec.startswith("s3://"):
        rest = spec[len("s3://") :].strip("/")
        bucket, _, prefix = rest.partition("/")
        if not bucket:
            raise ValueError(f"store {spec}: no bucket after s3://")
        return S3BlobStore(bucket, prefix, endpoint, region or os.environ.get("AWS_REGION") or "us-east-1", path_style if path_style is not None else endpoint is not None)
    if endpoint or region or path_style is not None:
        raise ValueError("--s3-endpoint, --s3-region and --s3-path-style apply to an s3:// store only")
    return FsBlobStore(spec)
