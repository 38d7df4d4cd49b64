"""Build caches that cannot run code from the tree: each cache file is sealed with an HMAC whose key is not in it.

The page and derivation caches hold pickles (a record's headline Quantities come back as the same objects),
and unpickling runs whatever the bytes name: a ``build/cache/*.pickle`` from a restored CI cache or an
unpacked checkout ran its code on the next build (issue 25, item 5). Every cache file is therefore
``MAGIC`` + HMAC-SHA256(key, payload) + payload, and a file is unpickled only when its seal verifies
(``hmac.compare_digest``, Python's constant-time comparison). The key is 32 random bytes made once per user,
outside any project (``key_path``: ``$XDG_CACHE_HOME/probebook/build-cache.key``, mode 0600), so no tree can
carry a valid seal: a planted or foreign file is ignored and what it held is made again, with one warning per
cache. A cache copied from another machine is never reused, by design. HMAC over the bytes costs about a
millisecond per megabyte, which the incremental build's time does not notice (``bench`` figures: issue 25).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
from functools import lru_cache
from pathlib import Path

log = logging.getLogger(__name__)

MAGIC = b"probebook-sealed-cache/1\n"
"""What a sealed file starts with; the 32 bytes of its seal follow, then the payload."""
KEY_BYTES = 32
KEY_NAME = "build-cache.key"


def key_path() -> Path:
    """Where this user's key lives: the XDG cache folder (``$XDG_CACHE_HOME``, else ``~/.cache``), never a project."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "probebook" / KEY_NAME


@lru_cache(maxsize=1)
def key() -> bytes:
    """This user's key, made on first use (a temp file hard-linked into place, so two builds agree on one key).

    Where it cannot be read or made (a read-only home), a key for this process only: every cache misses, once."""
    path = key_path()
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        log.warning("%s: build-cache key unreadable (%s); caches are not reused by this build", path, e.strerror)
        return secrets.token_bytes(KEY_BYTES)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.parent / f".{KEY_NAME}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(KEY_BYTES))
        try:
            os.link(tmp, path)  # fails if another build made one first: then that one is the key
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
        return _read_key(path)
    except OSError as e:
        log.warning("%s: build-cache key not made (%s); caches are not reused by this build", path, e.strerror)
        return secrets.token_bytes(KEY_BYTES)


def _read_key(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        data = f.read(KEY_BYTES + 1)
    if len(data) != KEY_BYTES:
        raise OSError(0, f"not {KEY_BYTES} bytes", str(path))
    return data


def seal(payload: bytes) -> bytes:
    """``payload`` with its seal before it: what a cache file holds."""
    return MAGIC + hmac.new(key(), payload, hashlib.sha256).digest() + payload


def unseal(blob: bytes) -> bytes | None:
    """The payload of a file ``seal`` made with this user's key; None for anything else (planted, foreign, torn)."""
    head = len(MAGIC) + hashlib.sha256().digest_size
    if len(blob) < head or not blob.startswith(MAGIC):
        return None
    payload = blob[head:]
    expected = hmac.new(key(), payload, hashlib.sha256).digest()
    return payload if hmac.compare_digest(expected, blob[len(MAGIC) : head]) else None


class Warned:
    """One warning per cache per build: a planted folder of a thousand files is one line, not a thousand."""

    def __init__(self, what: str):
        self.what = what
        self.done = False

    def __call__(self, path: Path) -> None:
        if not self.done:
            self.done = True
            log.warning("%s: %s not sealed by this user's builds; ignored, made again", path, self.what)
