"""Encrypted stores in the chaos suite: an independent reader of the store file format, and the
"nothing in clear" scan.

The engine writes encrypted stores in SQLCipher 4's format (include/syncstore.h, "Encryption at
rest"): 4096-byte pages, each with 80 reserved bytes at its end; [0, 4016) is the AES-256-CBC
ciphertext of the page (page 1 from byte 16: its first 16 bytes hold the file's salt instead of
"SQLite format 3\\0"), then a 16-byte IV and an HMAC-SHA512 over ciphertext || IV || the page
number (4 bytes, little-endian). The key is PBKDF2-HMAC-SHA512(passphrase, salt, kdfIter, 32
bytes) or the raw key of x'<64 hex>'; the HMAC key is PBKDF2-HMAC-SHA512(key, salt ^ 0x3a, 2, 32).

`decrypt_store` reads such a file with nothing of the engine (hashlib, hmac and the
`cryptography` package, which scripts/setup.sh --dev installs), checking every page's HMAC, and
returns the plain SQLite image: `integrity_check` of an encrypted store is then sqlite3's own
`PRAGMA integrity_check` of that image, as for a plaintext store. Call it on a store the engine
has closed (the close checkpoints the WAL into the file and empties it).
"""
import hashlib
import hmac
import os
import sqlite3
import tempfile
from pathlib import Path

PAGE = 4096
RESERVE = 80
IV_SIZE = 16
SALT_SIZE = 16
SQLITE_HEADER = b"SQLite format 3\x00"


class CipherError(Exception):
    """The file is not readable with this key: a page failed its HMAC, or the layout is wrong."""


def _raw_key(key):
    """The 32 key bytes of "x'<64 hex>'" (None for a passphrase)."""
    if len(key) == 67 and key[:2].lower() == "x'" and key[-1] == "'":
        try:
            return bytes.fromhex(key[2:-1])
        except ValueError:
            return None
    return None


def derive(key, salt, kdf_iter):
    """(AES key, HMAC key) of a store's key text for the file's salt."""
    raw = _raw_key(key)
    enc = raw if raw is not None else hashlib.pbkdf2_hmac("sha512", key.encode(), salt, kdf_iter, 32)
    mac = hashlib.pbkdf2_hmac("sha512", enc, bytes(b ^ 0x3A for b in salt), 2, 32)
    return enc, mac


def decrypt_store(path, key, kdf_iter):
    """The plaintext SQLite image of the encrypted store file at `path` (CipherError if a page
    fails its HMAC check or the file is not whole pages)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    data = Path(path).read_bytes()
    if not data or len(data) % PAGE:
        raise CipherError(f"{path}: {len(data)} bytes is not a whole number of {PAGE}-byte pages")
    if data[:16] == SQLITE_HEADER:
        raise CipherError(f"{path} is a plaintext SQLite file")
    salt = data[:SALT_SIZE]
    enc_key, mac_key = derive(key, salt, kdf_iter)
    out = bytearray()
    for n in range(len(data) // PAGE):
        page = data[n * PAGE:(n + 1) * PAGE]
        pgno = n + 1
        start = SALT_SIZE if pgno == 1 else 0
        body_end = PAGE - RESERVE
        iv = page[body_end:body_end + IV_SIZE]
        tag = page[body_end + IV_SIZE:]
        want = hmac.new(mac_key, page[start:body_end + IV_SIZE] + pgno.to_bytes(4, "little"), hashlib.sha512).digest()
        if not hmac.compare_digest(want, tag):
            raise CipherError(f"{path}: page {pgno} fails its HMAC check (wrong key, or a damaged page)")
        dec = Cipher(algorithms.AES(enc_key), modes.CBC(iv)).decryptor()
        plain = dec.update(page[start:body_end]) + dec.finalize()
        if pgno == 1:
            plain = SQLITE_HEADER + plain
            if plain[16:18] != PAGE.to_bytes(2, "big") or plain[20] != RESERVE:
                raise CipherError(f"{path}: page 1 decrypts to page size {int.from_bytes(plain[16:18], 'big')}, "
                                  f"reserve {plain[20]} (want {PAGE}, {RESERVE})")
        out += plain + bytes(RESERVE)
    return bytes(out)


def integrity_check_image(image):
    """sqlite3's PRAGMA integrity_check of a plain SQLite image (bytes), from a temporary file."""
    with tempfile.TemporaryDirectory(prefix="chaos-plain-") as d:
        p = os.path.join(d, "plain.db")
        with open(p, "wb") as f:
            f.write(image)
        conn = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
        try:
            return [row[0] for row in conn.execute("PRAGMA integrity_check")]
        finally:
            conn.close()


def integrity_encrypted(path, key, kdf_iter):
    """integrity_check of an encrypted store file: ["ok"], or what is wrong (HMAC failures included)."""
    try:
        return integrity_check_image(decrypt_store(path, key, kdf_iter))
    except CipherError as e:
        return [f"cipher: {e}"]


def scan(root, needles):
    """{relative path: [needles found]} for every file under `root` holding one of `needles`
    (bytes). Files that vanish while scanned are skipped."""
    found = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            try:
                with open(p, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                continue
            hits = [n for n in needles if n in data]
            if hits:
                found[os.path.relpath(p, root)] = hits
    return found


def needles_for(canary, *keys):
    """What must never be in an encrypted store's files: the canary its records carry, SQLite's
    plaintext header, and the key texts (and raw key bytes)."""
    out = [canary.encode() if isinstance(canary, str) else canary, SQLITE_HEADER]
    for key in keys:
        if not key:
            continue
        out.append(key.encode())
        raw = _raw_key(key)
        if raw is not None:
            out.append(raw)
            out.append(key[2:-1].encode())
    return out
