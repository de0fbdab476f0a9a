"""Annotator accounts of the annotation app: a users file of scrypt password hashes.

One account per line, ``NAME:scrypt$N$r$p$SALT$HASH`` (salt and hash in base64); blank
lines and lines starting with ``#`` are ignored. Passwords are never stored: only their
``hashlib.scrypt`` hash with a random 16-byte salt. Checking a password always runs one
scrypt, for unknown names too, and compares with ``hmac.compare_digest``, so neither the
answer time nor the comparison tells which names exist.

Add or change an account with ``t2ibench annotate-user USERS_FILE NAME`` (asks for the
password twice, or reads one line from stdin with ``--password-stdin``).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import os
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path

from benchmark.contract.atomic import atomic_path
from benchmark.human.events import check_annotator

SCHEME = "scrypt"
#: scrypt cost: 2**15 x 8 x 128 bytes = 32 MiB and about 0.1 s per check.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**15, 8, 1
MAX_SCRYPT_N = 2**20  # a hash with a larger cost is refused rather than run
SALT_BYTES, HASH_BYTES = 16, 32
MIN_PASSWORD_LENGTH, MAX_PASSWORD_LENGTH = 8, 1024


def check_user_name(name) -> str:
    """An annotator name usable as an account: :func:`events.check_annotator`, without ``:`` or a leading ``#``."""
    name = check_annotator(name)
    if ":" in name:
        raise ValueError(f"a user name must not contain ':', got {name!r}")
    if name.startswith("#"):
        raise ValueError(f"a user name must not start with '#', got {name!r}")
    return name


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=HASH_BYTES,
                          maxmem=256 * n * r + 2**20)


def hash_password(password: str) -> str:
    """``scrypt$N$r$p$SALT$HASH`` for ``password`` (a new random salt each time)."""
    if not isinstance(password, str) or not MIN_PASSWORD_LENGTH <= len(password) <= MAX_PASSWORD_LENGTH:
        raise ValueError(f"a password must have {MIN_PASSWORD_LENGTH} to {MAX_PASSWORD_LENGTH} characters")
    salt = secrets.token_bytes(SALT_BYTES)
    digest = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    salt64, digest64 = (base64.b64encode(b).decode("ascii") for b in (salt, digest))
    return f"{SCHEME}${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${salt64}${digest64}"


def _parse_hash(text: str) -> tuple[int, int, int, bytes, bytes]:
    parts = text.split("$")
    if len(parts) != 6 or parts[0] != SCHEME:
        raise ValueError(f"a password hash must look like {SCHEME}$N$r$p$SALT$HASH")
    try:
        n, r, p = (int(x) for x in parts[1:4])
        salt, digest = base64.b64decode(parts[4], validate=True), base64.b64decode(parts[5], validate=True)
    except ValueError:
        raise ValueError("a password hash has a non-numeric cost or invalid base64") from None
    if not (1 < n <= MAX_SCRYPT_N and n & (n - 1) == 0 and 1 <= r <= 32 and 1 <= p <= 16):
        raise ValueError(f"a password hash has an unsupported scrypt cost (N={n}, r={r}, p={p})")
    if len(salt) < 8 or len(digest) != HASH_BYTES:
        raise ValueError("a password hash has a salt or hash of the wrong length")
    return n, r, p, salt, digest


def read_users(path: str | Path) -> dict[str, str]:
    """Name -> password hash from a users file; a one-line ``ValueError`` naming the line if it is malformed."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"users file {path} does not exist; add a user with `t2ibench annotate-user {path} NAME`")
    users: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, hashed = line.partition(":")
        try:
            if not sep:
                raise ValueError("expected NAME:HASH")
            name = check_user_name(name)
            _parse_hash(hashed.strip())
        except ValueError as exc:
            raise ValueError(f"users file {path} line {number}: {exc}") from None
        if name in users:
            raise ValueError(f"users file {path} line {number}: user {name!r} appears twice")
        users[name] = hashed.strip()
    if not users:
        raise ValueError(f"users file {path} has no users; add one with `t2ibench annotate-user {path} NAME`")
    return users


def write_users(path: str | Path, users: Mapping[str, str]) -> Path:
    """Write ``users`` (name -> hash) to ``path`` atomically, readable by its owner only."""
    text = "".join(f"{check_user_name(name)}:{hashed}\n" for name, hashed in users.items())
    with atomic_path(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o600)
    return Path(path)


def set_password(path: str | Path, name: str, password: str) -> Path:
    """Add ``name`` to the users file (created if missing) or change their password."""
    name = check_user_name(name)
    users = read_users(path) if Path(path).is_file() and Path(path).stat().st_size else {}
    users[name] = hash_password(password)
    return write_users(path, users)


def remove_user(path: str | Path, name: str) -> Path:
    """Remove ``name`` from the users file."""
    users = read_users(path)
    if name not in users:
        raise ValueError(f"user {name!r} is not in {path}")
    del users[name]
    return write_users(path, users)


# A hash of a random password: unknown names cost one scrypt too.
_DUMMY_HASH: str | None = None


def verify_password(users: Mapping[str, str], name: str, password: str) -> bool:
    """True if ``password`` is ``name``'s; the same work whether or not ``name`` exists."""
    global _DUMMY_HASH
    if _DUMMY_HASH is None:
        _DUMMY_HASH = hash_password(secrets.token_urlsafe(16))
    known = isinstance(name, str) and name in users
    n, r, p, salt, digest = _parse_hash(users[name] if known else _DUMMY_HASH)
    if not isinstance(password, str) or len(password) > MAX_PASSWORD_LENGTH:
        password = ""
    ok = hmac.compare_digest(_scrypt(password, salt, n, r, p), digest)
    return known and ok


def gradio_auth(users: Mapping[str, str]) -> Callable:
    """The ``auth`` callable for ``Blocks.launch``: checks in a worker thread (scrypt is slow on purpose)."""
    users = dict(users)

    async def auth(name: str, password: str) -> bool:
        return await asyncio.to_thread(verify_password, users, name, password)

    return auth
