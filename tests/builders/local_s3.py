"""The local S3 server as its tests drive it: a bucket forgotten as a new process would start without it, and a
server in a process of its own, to be killed."""

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

_SERVE = """
import sys, time
from pathlib import Path
from shared.local.s3_server import LocalS3Server
from shared.local.supervisor import ensure_bucket
server = LocalS3Server(Path(sys.argv[1]), port=int(sys.argv[2]))
server.start()
ensure_bucket(server.endpoint, sys.argv[3])
print("ready", flush=True)
time.sleep(600)
"""


def forget_bucket(bucket: str) -> None:
    """A new process starts with an empty moto: simulate it by forgetting the bucket."""
    from moto.s3.models import s3_backends

    s3_backends["123456789012"]["aws"].buckets.pop(bucket, None)
    s3_backends.bucket_accounts.pop(bucket, None)


def server_process(data_dir: Path, port: int, bucket: str) -> "subprocess.Popen[bytes]":
    """A local S3 server in a child process, serving `bucket` once this returns."""
    child = subprocess.Popen(
        [sys.executable, "-c", _SERVE, str(data_dir), str(port), bucket],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
    return child
