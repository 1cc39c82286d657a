import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

# The package beside these tests (python/durable_rl_torch), without installing it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# scripts/lib/s3-server.ts: the versitygw setup builds, and the local server's throwaway keys.
VERSITYGW = os.environ.get("DURABLE_RL_VERSITYGW") or str(
    Path(os.environ.get("DURABLE_RL_CACHE") or Path.home() / ".cache" / "durable-rl") / "versitygw-v1.8.0" / "versitygw"
)
S3_KEYS = {"AWS_ACCESS_KEY_ID": "durable-rl-local", "AWS_SECRET_ACCESS_KEY": "durable-rl-local-secret"}


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """A real S3-compatible server (versitygw over a temporary folder) with one bucket, "test"; skipped
    where setup has not built versitygw. Yields its endpoint."""
    if not Path(VERSITYGW).is_file():
        pytest.skip(f"versitygw not found at {VERSITYGW} (scripts/setup.sh builds it)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = tempfile.mkdtemp(prefix="durable-rl-pytest-s3-")
    env = {**os.environ, "ROOT_ACCESS_KEY_ID": S3_KEYS["AWS_ACCESS_KEY_ID"], "ROOT_SECRET_ACCESS_KEY": S3_KEYS["AWS_SECRET_ACCESS_KEY"]}
    proc = subprocess.Popen([VERSITYGW, "--port", f"127.0.0.1:{port}", "--quiet", "posix", data], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    saved = {k: os.environ.get(k) for k in S3_KEYS}
    os.environ.update(S3_KEYS)
    try:
        deadline = time.time() + 30
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"versitygw did not listen on 127.0.0.1:{port}")
            time.sleep(0.1)
        endpoint = f"http://127.0.0.1:{port}"
        import boto3

        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="test")
        yield endpoint
    finally:
        proc.terminate()
        proc.wait()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(params=["fs", "s3"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path):
    """Each test on both stores: a temporary folder, and a fresh prefix on the real S3 server."""
    from durable_rl_torch.blob_store import FsBlobStore, S3BlobStore

    if request.param == "fs":
        return FsBlobStore(tmp_path)
    endpoint = request.getfixturevalue("s3_server")
    return S3BlobStore("test", f"pytest-{secrets.token_hex(6)}", endpoint, "us-east-1", True)
