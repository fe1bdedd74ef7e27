"""Where model artifacts live: a folder under MEDIA_ROOT, or an S3 prefix when
``settings.HATLAB_S3_BUCKET`` is set (boto3).

An artifact is a folder of files (weights, vocabulary, config). Its *location* is what a
``ModelRun.artifact`` stores: a path relative to MEDIA_ROOT (``models/run-7``) or an S3 URL
(``s3://bucket/models/run-7``). Loading always goes through a local folder: an S3 artifact is
downloaded once into a cache under MEDIA_ROOT and reused.

Folders are published atomically (written beside, then renamed), so a job killed half way never
leaves a half-written folder that a later run would take for a finished one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from functools import partial
from pathlib import Path

import boto3
from django.conf import settings

S3_SCHEME = "s3://"
CACHE_FOLDER = "artifact-cache"
_CHUNK = 1 << 20


def media_root() -> Path:
    return Path(settings.MEDIA_ROOT)


def s3_bucket() -> str:
    return getattr(settings, "HATLAB_S3_BUCKET", "") or ""


def s3_client():
    """A boto3 S3 client (credentials and region from the environment, as boto3 reads them)."""
    return boto3.client("s3", endpoint_url=os.environ.get("HATLAB_S3_ENDPOINT_URL") or None)


def model_run_key(model_run_id: int, attempt: int | None = None) -> str:
    """The artifact key of a model run. A job's run writes under its own attempt
    (``models/run-7-attempt-2``), so a superseded run that resumes never overwrites the artifact of the
    attempt that won; the winner's fenced write publishes its key on the run's row."""
    base = f"models/run-{int(model_run_id)}"
    return base if attempt is None else f"{base}-attempt-{int(attempt)}"


def remove_artifact(location: str, client=None) -> None:
    """Delete the artifact at ``location`` (a folder under MEDIA_ROOT, or an S3 prefix); missing is fine."""
    if location.startswith(S3_SCHEME):
        bucket, prefix = split_s3_url(location)
        client = client or s3_client()
        listing = client.list_objects_v2(Bucket=bucket, Prefix=prefix.rstrip("/") + "/")
        for item in listing.get("Contents", []):
            client.delete_object(Bucket=bucket, Key=item["Key"])
        return
    shutil.rmtree(media_root() / _safe_relative(location), ignore_errors=True)


def split_s3_url(location: str) -> tuple[str, str]:
    """``s3://bucket/a/b`` → ``("bucket", "a/b")``."""
    if not location.startswith(S3_SCHEME):
        raise ValueError(f"not an S3 location: {location!r}")
    bucket, _, key = location[len(S3_SCHEME) :].partition("/")
    if not bucket or not key:
        raise ValueError(f"an S3 location needs a bucket and a key: {location!r}")
    return bucket, key.rstrip("/")


def _safe_relative(key: str) -> Path:
    path = Path(key)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise ValueError(f"artifact key must be a relative path inside MEDIA_ROOT: {key!r}")
    return path


def _publish(src: Path, dest: Path) -> None:
    """Move folder ``src`` to ``dest``, replacing what was there."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
        os.replace(dest, old)
        os.replace(src, dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(src, dest)


def _cache_dir(bucket: str, key: str) -> Path:
    return media_root() / CACHE_FOLDER / bucket / _safe_relative(key)


def store_artifact(folder: Path | str, key: str, client=None) -> str:
    """Publish the files of ``folder`` under ``key``; return the location to store on the row.

    Without a bucket the folder is moved to ``MEDIA_ROOT/key``. With one, each file is uploaded
    to ``s3://bucket/key/<relative path>`` and the folder becomes the local cache copy.
    """
    folder = Path(folder)
    rel = _safe_relative(key)
    bucket = s3_bucket()
    if not bucket:
        dest = media_root() / rel
        if folder.resolve() != dest.resolve():
            _publish(folder, dest)
        return rel.as_posix()
    client = client or s3_client()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        with path.open("rb") as fh:
            client.put_object(
                Bucket=bucket, Key=f"{rel.as_posix()}/{path.relative_to(folder).as_posix()}", Body=fh
            )
    _publish(folder, _cache_dir(bucket, rel.as_posix()))
    return f"{S3_SCHEME}{bucket}/{rel.as_posix()}"


def local_artifact(location: str, client=None) -> Path:
    """A local folder holding the artifact at ``location`` (downloaded from S3 on first use)."""
    if not location:
        raise ValueError("this model run has no stored artifact")
    if not location.startswith(S3_SCHEME):
        path = media_root() / _safe_relative(location)
        if not path.is_dir():
            raise FileNotFoundError(f"artifact folder {path} is missing")
        return path
    bucket, key = split_s3_url(location)
    dest = _cache_dir(bucket, key)
    if dest.is_dir():
        return dest
    client = client or s3_client()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        found = 0
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"{key}/"):
            for obj in page.get("Contents", []):
                rel = _safe_relative(obj["Key"][len(key) + 1 :])
                target = tmp / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                body = client.get_object(Bucket=bucket, Key=obj["Key"])["Body"]
                with target.open("wb") as out:
                    for chunk in iter(partial(body.read, _CHUNK), b""):
                        out.write(chunk)
                found += 1
        if not found:
            raise FileNotFoundError(f"no objects under {location}")
        _publish(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def replace_media_folder(folder: Path | str, key: str) -> Path:
    """Move ``folder`` to ``MEDIA_ROOT/key`` in one rename, replacing what was there (site-wide files
    every process reads from MEDIA_ROOT, such as the opinion lexicon); return the new path."""
    dest = media_root() / _safe_relative(key)
    _publish(Path(folder), dest)
    return dest


def work_folder(key: str) -> Path:
    """A fresh, empty folder to write an artifact into before :func:`store_artifact` publishes it.

    It lies beside its destination (same file system, so publishing is a rename).
    """
    rel = _safe_relative(key)
    parent = (
        (media_root() / rel).parent if not s3_bucket() else _cache_dir(s3_bucket(), rel.as_posix()).parent
    )
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{rel.name}-work-", dir=parent))
