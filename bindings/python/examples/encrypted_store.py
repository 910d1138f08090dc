"""Encrypted stores: a key in the store config, a wrong key refused, the Cordova-style modules'
key provider, change_key (no server needed)."""

import os
import sys
import tempfile
from typing import Optional

import syncstore
from syncstore import cordova, smartstore

# The stores' directory: the first argument, else a scratch directory removed at the end.
scratch = tempfile.TemporaryDirectory()
root = sys.argv[1] if len(sys.argv) > 1 else scratch.name

# In an app the key comes from the platform's key store, never from the source code.
key = os.environ.get("VAULT_KEY", "correct horse battery staple")
config: syncstore.StoreConfigDict = {"storeName": "vault", "key": key, "kdfIter": 4000}

with syncstore.Store(root, config) as store:   # created encrypted (SQLCipher 4's file format)
    store.register_soup("notes", [{"path": "title", "type": "string"}])
    store.upsert("notes", [{"title": "launch plan", "body": "not for other eyes"}])

try:
    syncstore.Store(root, {"storeName": "vault", "key": "a guess", "kdfIter": 4000})
except syncstore.AuthError as e:
    print("wrong key:", e.name)                # the file is left untouched


# Hybrid code passes no key: the host gives the Cordova-style modules each store's key.
def store_key(store_config: syncstore.StoreConfigDict) -> Optional[str]:
    return key if store_config.get("storeName") == "vault" else None


cordova.set_encryption_key_provider(store_key, kdf_iter=4000)
smartstore.init(root)
print("hybrid:", smartstore.soupExists({"storeName": "vault"}, "notes"))
cordova.close_all()

# A new key (atomic: the store opens with exactly one of the two keys, even after a crash).
with syncstore.Store(root, config) as store:
    store.change_key("a new passphrase")
with syncstore.Store(root, {"storeName": "vault", "key": "a new passphrase", "kdfIter": 4000}) as store:
    print("after change_key:", len(store.query("notes", {"queryType": "range", "indexPath": "title"})), "note")
    store.change_key(None)                     # back to a plaintext store

with open(os.path.join(root, "user", "vault.db"), "rb") as f:
    print("plaintext again:", f.read(16) == b"SQLite format 3\0")

scratch.cleanup()
