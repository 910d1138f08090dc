/*
 * syncstore.h — the C ABI of libsyncstore: an embeddable JSON document store (SmartStore
 * semantics) with Salesforce-compatible sync (MobileSync semantics).
 *
 * Conventions that hold for every function below
 * ------------------------------------------------
 * Status.     Every function that can fail returns an int status: SYNCSTORE_OK (0) or one of the
 *             SYNCSTORE_ERR_* codes. Codes are stable across releases; decide on codes, never on
 *             messages.
 * Errors.     The last parameter `err` is optional (may be NULL). When given it is caller-owned
 *             storage that the call fills on failure (code, retryable flag, message) and clears
 *             (code 0, empty message) on success.
 * Strings.    Every `const char *` argument is UTF-8, NUL-terminated and borrowed for the duration
 *             of the call only. Every `char **out` result is allocated by the library and must be
 *             released with syncstore_free(). On failure `*out` is set to NULL.
 * Outputs.    Out pointers are required (NULL is SYNCSTORE_ERR_ARGUMENT) except those documented
 *             "may be NULL": syncstore_upsert's out_json, syncstore_remove_by_query's out_count,
 *             syncstore_wait_sync's out_state_json, and out_sync_id of syncstore_sync_down,
 *             syncstore_sync_up, syncstore_create_sync_down, syncstore_create_sync_up and
 *             syncstore_resync_by_name. Passing NULL there only drops that result: the call
 *             still does all its work (the sync is created or started, the entries are stored
 *             or deleted) and fails with the same status it would otherwise.
 * JSON.       Configurations, entries, query specs and results are JSON text, held to one rule
 *             wherever it comes from (arguments, files the library reads, server answers,
 *             custom target callbacks, entries read back): RFC 8259 JSON in valid UTF-8 (never
 *             repaired to U+FFFD), with no NUL byte anywhere in the text (inside a string write
 *             \u0000), no U+0000 in an object key (in string values it is kept), and nesting at
 *             most SYNCSTORE_JSON_MAX_DEPTH arrays and objects deep: an entry counts from itself
 *             (the entries_json array or the server page around it does not count), any other
 *             argument from its root. Text that breaks the rule is rejected with
 *             SYNCSTORE_ERR_ARGUMENT and changes nothing. A sync down record that breaks it fails
 *             the run (SERVER for a server's record, ARGUMENT for a custom target's), the
 *             message naming the record's Id and the rule, and nothing of its page is stored.
 *             An entry an earlier version stored against the rule still reads: queries read the
 *             paths SQLite cannot parse in it as null, and a call that must parse it (re-index,
 *             sync up) fails naming its _soupEntryId; upsert it anew or delete it.
 * Empty text. An optional JSON argument (store_config, options_json, syncstore_sync_up's
 *             target_json) takes NULL or "" for "not given". Everywhere else "" is not JSON
 *             (ARGUMENT), and text of whitespace only is never JSON (ARGUMENT).
 * Handles.    syncstore_store is opaque. A handle stays valid until syncstore_close(); using a
 *             closed handle returns SYNCSTORE_ERR_STATE (never undefined behaviour).
 * Threads.    Every function may be called from any thread, concurrently, on the same handle.
 *             Writes to one store are serialized; reads run in parallel with a write (SQLite WAL)
 *             and see the last committed state. Which thread runs callbacks, what a callback
 *             may call, and what close guarantees: "Callbacks, threads and close" (below the
 *             sync functions' introduction).
 * Atomicity.  Every call that writes is one SQLite transaction: on error the store is unchanged.
 * Traps.      No input makes the library abort the host process.
 */
#ifndef SYNCSTORE_H
#define SYNCSTORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Major version of this ABI; also the soname suffix (libsyncstore.so.1). The one place it is
 *  written: the library's soname, CMake and the bindings take it from here. */
#define SYNCSTORE_ABI_VERSION 1

/** Version of this header and of the library built with it, "major.minor.patch". The one place
 *  it is written: the library, CMake and the bindings' package metadata take it from here
 *  (Tests/c/check_abi_facts.py checks the copies a package format needs). */
#define SYNCSTORE_VERSION "0.1.0"

/** Deepest nesting of arrays and objects in an entry (the entry object is level 1) or any other
 *  JSON argument. SQLite's JSON functions read no deeper (2000 levels in SQLite 3.40-3.44, 1000
 *  from 3.45), so every stored entry stays queryable whatever SQLite the library runs on. */
#define SYNCSTORE_JSON_MAX_DEPTH 1000

/* ---------------------------------------------------------------------------------------------
 * Status codes
 * ------------------------------------------------------------------------------------------- */

/** Success. */
#define SYNCSTORE_OK 0
/** An argument is invalid: NULL where text is required, malformed JSON or UTF-8, a bad index
 *  spec, query spec or Smart SQL statement, a value of the wrong type. Fix the input. */
#define SYNCSTORE_ERR_ARGUMENT 1
/** A named thing of this library does not exist: soup, entry, store, cursor, sync. Never a
 *  server's answer (a server's 404 is SERVER). */
#define SYNCSTORE_ERR_NOT_FOUND 2
/** A thing that must be new already exists (e.g. a sync name). */
#define SYNCSTORE_ERR_EXISTS 3
/** The resource is in use: a store opened elsewhere in this process, a sync already running.
 *  Retry later. */
#define SYNCSTORE_ERR_BUSY 4
/** The network failed (connect, timeout, dropped connection). Retryable. */
#define SYNCSTORE_ERR_NETWORK 5
/** The server refused the credentials (HTTP 401) and they could not be refreshed (set new
 *  credentials), or a store's key does not open it: a wrong key or kdfIter, no key for an
 *  encrypted store, a key for a plaintext one. */
#define SYNCSTORE_ERR_AUTH 6
/** The server answered with an error: any HTTP error status but 401 (AUTH), 404 included, or an
 *  answer that is not what the API sends. The sync state's "error" names the request, the
 *  status and the server's error text, cut to about 4 KB; a body that is not the API's error
 *  JSON (a proxy's HTML page) only by a plain-text summary of at most 200 characters, never its
 *  markup (docs/errors.md). Retryable when the server said so (5xx). */
#define SYNCSTORE_ERR_SERVER 7
/** A write conflicts with the stored state (e.g. several entries match an external id). */
#define SYNCSTORE_ERR_CONFLICT 8
/** The database file failed: disk full, I/O error, corrupt file, cannot open. */
#define SYNCSTORE_ERR_STORAGE 9
/** A bug inside the library. Please report it with the message. */
#define SYNCSTORE_ERR_INTERNAL 10
/** The call is not valid now: a closed or unknown handle, a call in the wrong order. */
#define SYNCSTORE_ERR_STATE 11

/** Capacity of syncstore_error.message, including the terminating NUL. */
#define SYNCSTORE_ERROR_MESSAGE_SIZE 512

/** Error details. Caller-owned; pass NULL where details are not wanted. */
typedef struct syncstore_error {
    /** One of the SYNCSTORE_ERR_* codes, or SYNCSTORE_OK. */
    int code;
    /** 1 when the same call may succeed if retried later unchanged (network, busy, 5xx). */
    int retryable;
    /** What was wrong and what to do, UTF-8, NUL-terminated, truncated to fit. */
    char message[SYNCSTORE_ERROR_MESSAGE_SIZE];
} syncstore_error;

/** An open store (one SQLite database). Opaque. */
typedef struct syncstore_store syncstore_store;

/* ---------------------------------------------------------------------------------------------
 * Library
 * ------------------------------------------------------------------------------------------- */

/** Version of the loaded library (the SYNCSTORE_VERSION it was built with). Static storage: do
 *  not free. Any thread. Never fails. */
const char *syncstore_version(void);

/** The ABI major version the library was built with; compare with SYNCSTORE_ABI_VERSION. */
int syncstore_abi_version(void);

/** Releases a string (or any buffer) returned by this library. NULL is ignored. Any thread. */
void syncstore_free(void *ptr);

/** Name of a status code ("SYNCSTORE_ERR_NOT_FOUND"). Static storage: do not free. */
const char *syncstore_status_name(int status);

/* ---------------------------------------------------------------------------------------------
 * Stores
 *
 * A store is named by a storeConfig JSON: {"isGlobalStore": false, "storeName": "MyStore"}.
 * `true` / `false` alone mean {"isGlobalStore": true|false}; NULL, "" or "null" mean the default
 * user store ("smartstore"); whitespace alone is ARGUMENT. User and global stores with the same name are different databases.
 * Stores live under a root directory the host chooses: <root>/user/<name>.db and
 * <root>/global/<name>.db. Store names are 1-128 characters of [A-Za-z0-9_.-], not starting
 * with '.'.
 *
 * Read-only stores. {"storeName": ..., "readOnly": true} opens an existing store for reading
 * only, e.g. a file or directory this process cannot write: queries, soup and sync state reads
 * work; writes, soup changes, syncs and syncstore_change_key are SYNCSTORE_ERR_STATE naming the
 * file; a store that does not exist is NOT_FOUND (nothing is created). SQLite needs the store's
 * -wal and -shm files, or a directory where it can create them, to read a WAL database: when
 * neither is there (no process has the store open and the directory is read-only), the file is
 * read as unchanging (SQLite's immutable open), so a process writing it meanwhile may make
 * reads fail or miss its commits. A store already open in this process must be opened the same
 * way (STATE otherwise). Without readOnly, such a store is STORAGE (at the open or at the first
 * write) naming the file.
 *
 * Encryption at rest. {"storeName": ..., "key": "<passphrase>", "kdfIter": 256000} opens (or
 * creates) an encrypted store, in SQLCipher 4's file format: AES-256-CBC pages with a random IV
 * and an HMAC-SHA512 each, the key derived from the passphrase by PBKDF2-HMAC-SHA512 with
 * `kdfIter` iterations (default 256000, SQLCipher 4's; the Mobile SDK uses 4000) and the file's
 * random salt. "key": "x'<64 hex digits>'" is the 256-bit key itself (no KDF); "x'<96 hex>'" adds
 * the salt; any other x'...' is ARGUMENT. Such a store opens in SQLCipher 4 tools (PRAGMA key,
 * PRAGMA kdf_iter) once closed.
 * The database file, its WAL and journals hold no plaintext page; sorts and temporary tables of
 * its connections stay in memory. Each store (user, global, each name) has its own key; the key is
 * derived once per store open, never written, logged or put in a message, and wiped when the
 * store's last handle closes. A page that fails its HMAC check (a damaged or altered file) is
 * SYNCSTORE_ERR_STORAGE, never data. "key": null or no "key" is a plaintext store. Stores
 * created without a key stay plaintext until syncstore_change_key(). An open encrypted store
 * keeps up to 64 MB of recently read or written pages decrypted (shared by its handles and
 * threads; memory is taken only for pages read, so a smaller store uses about its own size),
 * wiped at the last close, and
 * each of its SQLite connections (one writer, up to four idle readers) caches up to 8 MB of
 * decrypted pages (2 MB for a plaintext store).
 * ------------------------------------------------------------------------------------------- */

/**
 * Opens (creating if needed) the store named by `store_config` under `root_dir`.
 * root_dir:     directory for all stores; created if missing.
 * store_config: storeConfig JSON (see above), may be NULL.
 * out:          receives the handle; release it with syncstore_close().
 * Opening a store that is already open in this process returns another handle to the same
 * store (they share connections and caches); its config must carry the same key (and kdfIter).
 * An open racing the close of the store's last handle waits for that close to end (see
 * "Callbacks, threads and close"). Syncs whose run was queued or running when a process ended
 * become STOPPED (see "Runs").
 * Errors: ARGUMENT (bad config, name, empty key or kdfIter < 1), NOT_FOUND (readOnly and no
 * such store), STATE (open in this process with another readOnly), AUTH (the key does not open the
 * store: wrong key or kdfIter, no key for an encrypted store, a key for a plaintext one; the
 * file is not touched), STORAGE (cannot create or open the file; a damaged encrypted page 1).
 */
int syncstore_open(const char *root_dir, const char *store_config, syncstore_store **out,
                   syncstore_error *err);

/**
 * Closes a handle: its sync runs are stopped and waited for and its open cursors closed (see
 * "Callbacks, threads and close" for what holds when it returns). When the last handle of a store
 * closes, the write-ahead log is checkpointed into the database file and truncated to zero
 * bytes, then the store's connections close: the <name>.db file alone then holds every commit
 * and can be copied or backed up without its -wal and -shm files (the -wal file is left empty
 * or is deleted). While another process has the store inside a transaction, this checkpoint
 * waits for it briefly (about half a second) and then leaves what it could not copy in the
 * -wal, where SQLite finds it on the next open or checkpoint; the close still succeeds.
 * Closing NULL is OK; closing twice returns SYNCSTORE_ERR_STATE, and so does a close from inside
 * a callback of the same store (nothing is closed then).
 */
int syncstore_close(syncstore_store *store, syncstore_error *err);

/**
 * Changes the key of an open store, atomically: a plaintext store becomes encrypted, an encrypted
 * one gets a new key, and new_key NULL decrypts it. new_key: a passphrase or x'<64 hex>' (see
 * "Encryption at rest"); the new key uses the kdfIter of the store config it was opened with
 * (for a plaintext store too: {"storeName": ..., "kdfIter": 4000} then a change of key gives the
 * Mobile SDK's setting; 256000 when the config has none). The whole store is written under the new key to <name>.db.rekey beside it,
 * synced, and renamed over <name>.db: a crash or SIGKILL at any point leaves a store that opens
 * with exactly one of the old and new keys, every entry in it (a leftover .rekey file is deleted
 * by the next open). Every handle of this process to the store stays valid and uses the new key;
 * opens after this call need the new key.
 * Thread: any, not a sync callback (STATE). Waits for writes and reads in flight to end and holds
 * new ones until it returns.
 * Errors: BUSY (retryable) while a sync of the store runs or is queued (wait for it or stop it),
 * or while another process has the store open (about 2 seconds of waiting first); nothing is
 * changed then. ARGUMENT for an empty key. STORAGE if the disk fails (the old file stays).
 * Changing a plaintext store to no key is OK and does nothing.
 */
int syncstore_change_key(syncstore_store *store, const char *new_key, syncstore_error *err);

/**
 * Lists store names under root_dir as a JSON array of strings, sorted.
 * is_global: 0 = user stores, 1 = global stores.
 */
int syncstore_list_stores(const char *root_dir, int is_global, char **out_json,
                          syncstore_error *err);

/**
 * Deletes one store's database files. Errors: BUSY if the store is open in this process,
 * NOT_FOUND if it does not exist, ARGUMENT for a bad config.
 */
int syncstore_remove_store(const char *root_dir, const char *store_config, syncstore_error *err);

/** Deletes every user (is_global=0) or global (1) store under root_dir that is not open.
 *  Errors: BUSY (nothing removed) if one of them is open in this process. */
int syncstore_remove_all_stores(const char *root_dir, int is_global, syncstore_error *err);

/** Size of the store's database in bytes: pages in use times page size, as of the last commit
 *  (data still in the WAL counts). Grows as data is added; does not wait for a running write. */
int syncstore_database_size(syncstore_store *store, int64_t *out_bytes, syncstore_error *err);

/**
 * Registers the soups of a userstore.json / globalstore.json file:
 * {"soups": [{"soupName": "accounts", "indexes": [{"path": "Id", "type": "string"}, ...]}]}.
 * Existing soups are skipped. All soups are registered in one transaction.
 * Errors: ARGUMENT (bad file content), NOT_FOUND (no such file), STORAGE.
 */
int syncstore_load_store_config(syncstore_store *store, const char *path, syncstore_error *err);

/* ---------------------------------------------------------------------------------------------
 * Soups
 *
 * A soup is a named collection of JSON objects; any non-empty string is a valid name.
 * Index specs: [{"path": "a.b", "type": "string|integer|floating|full_text|json1"}].
 * ------------------------------------------------------------------------------------------- */

/** Creates a soup with its indexes. Registering an existing soup is a no-op (OK).
 *  Errors: ARGUMENT (empty name, empty or invalid spec list, duplicate path). */
int syncstore_register_soup(syncstore_store *store, const char *soup, const char *index_specs_json,
                            syncstore_error *err);

/** Sets *out_exists to 1 if the soup exists, else 0. */
int syncstore_soup_exists(syncstore_store *store, const char *soup, int *out_exists,
                          syncstore_error *err);

/** Drops a soup and its entries. Removing a soup that does not exist is a no-op (OK). */
int syncstore_remove_soup(syncstore_store *store, const char *soup, syncstore_error *err);

/** Deletes every entry of a soup; keeps its indexes. Errors: NOT_FOUND. */
int syncstore_clear_soup(syncstore_store *store, const char *soup, syncstore_error *err);

/** The soup's index specs as a JSON array, in registration order. Errors: NOT_FOUND. */
int syncstore_get_soup_index_specs(syncstore_store *store, const char *soup, char **out_json,
                                   syncstore_error *err);

/**
 * Replaces a soup's index specs. Entries and their _soupEntryId are kept. With reindex=1 every
 * index is rebuilt from the entries; with reindex=0 indexes on paths that were not indexed
 * before stay empty for existing entries until syncstore_reindex_soup(). One transaction.
 * Errors: NOT_FOUND, ARGUMENT.
 */
int syncstore_alter_soup(syncstore_store *store, const char *soup, const char *index_specs_json,
                         int reindex, syncstore_error *err);

/** Recomputes the index values of `paths_json` (JSON array of indexed paths) for every entry.
 *  Errors: NOT_FOUND (soup), ARGUMENT (a path that is not indexed). */
int syncstore_reindex_soup(syncstore_store *store, const char *soup, const char *paths_json,
                           syncstore_error *err);

/* ---------------------------------------------------------------------------------------------
 * Entries
 *
 * Stored entries carry "_soupEntryId" (integer, from 1 in a new soup) and
 * "_soupLastModifiedDate" (epoch ms). The local-change flags "__local__", "__locally_created__",
 * "__locally_updated__", "__locally_deleted__" are ordinary fields that hosts set; booleans and
 * the strings "true"/"1" are treated alike by sync.
 * ------------------------------------------------------------------------------------------- */

/**
 * Inserts or updates entries (JSON array of objects, or one object) in one transaction.
 * external_id_path: NULL or "_soupEntryId" — an entry with _soupEntryId updates that entry
 *   (NOT_FOUND if it does not exist), one without is created. Another path — the path must be
 *   indexed; its value is looked up: no match creates, one match updates; several matches
 *   (CONFLICT) or a null/missing value (ARGUMENT) fail the whole call.
 * out_json: the stored entries (JSON array, same order), may be NULL when not wanted.
 * Racing a sync up: an entry still flagged __locally_created__ that replaces a stored one keeps
 *   the stored "__sync_create_sent__" mark when it carries none, and, when the sync up has just
 *   created its record (in this process) and the stored entry holds its id, gets that id back
 *   (dropping any copy of the mark it carries) and becomes an update; so a read-modify-write
 *   that overlapped the sync up never makes the record twice.
 * Errors: NOT_FOUND (soup), ARGUMENT, CONFLICT.
 */
int syncstore_upsert(syncstore_store *store, const char *soup, const char *entries_json,
                     const char *external_id_path, char **out_json, syncstore_error *err);

/** The entries with the given ids (JSON array of integers) as a JSON array, in the order of
 *  the ids; ids that do not exist are skipped. Errors: NOT_FOUND (soup), ARGUMENT. */
int syncstore_retrieve(syncstore_store *store, const char *soup, const char *ids_json,
                       char **out_json, syncstore_error *err);

/** Deletes the entries with the given ids (JSON array of integers). Missing ids are ignored.
 *  Errors: NOT_FOUND (soup), ARGUMENT. */
int syncstore_remove_entries(syncstore_store *store, const char *soup, const char *ids_json,
                             syncstore_error *err);

/** Deletes every entry matching a query spec (all of them, not only the first page; smart
 *  specs are refused). *out_count (may be NULL) receives the number deleted. */
int syncstore_remove_by_query(syncstore_store *store, const char *soup, const char *query_spec_json,
                              int64_t *out_count, syncstore_error *err);

/* ---------------------------------------------------------------------------------------------
 * Queries and cursors
 *
 * Query spec JSON keys: queryType ("exact"|"range"|"like"|"match"|"smart"), indexPath, matchKey,
 * beginKey, endKey, likeKey, smartSql, orderPath, order ("ascending"|"descending"), pageSize
 * (default 10), selectPaths, timeoutMs (Smart SQL only: how long counting, or reading one
 * page, may run before it is stopped with ARGUMENT; 1 to 3600000, default 30000). Paths may be
 * indexed or not (unindexed paths are read from the JSON); "_soupEntryId", "_soupCreatedDate"
 * and "_soupLastModifiedDate" are always available.
 *
 * A cursor result is JSON: {"cursorId", "currentPageIndex", "pageSize", "totalEntries",
 * "totalPages", "currentPageOrderedEntries": [...]}. Entries are whole objects, or arrays of
 * values for selectPaths and Smart SQL. totalEntries is counted when the cursor opens; each
 * page is re-queried when moved to.
 * ------------------------------------------------------------------------------------------- */

/** Runs a non-smart query spec against a soup and opens a cursor on its first page.
 *  Close the cursor with syncstore_cursor_close(). Errors: NOT_FOUND (soup), ARGUMENT. */
int syncstore_query_soup(syncstore_store *store, const char *soup, const char *query_spec_json,
                         char **out_cursor_json, syncstore_error *err);

/** Runs a smart query spec ({"queryType":"smart","smartSql":..., "pageSize":...}) and opens a
 *  cursor. Only one SELECT statement is accepted; anything else is ARGUMENT, and so is a
 *  statement still running at the spec's timeoutMs (default 30 s; see above). */
int syncstore_run_smart_query(syncstore_store *store, const char *query_spec_json,
                              char **out_cursor_json, syncstore_error *err);

/** One page of a query's results as a JSON array of entries (or of value rows, as in a
 *  cursor's currentPageOrderedEntries), without opening a cursor and without counting the
 *  matches: the cheapest way to look entries up when totalEntries is not needed. Takes every
 *  query type; for a smart spec `soup` is ignored and may be NULL. `page_index` counts from 0;
 *  a page past the last is an empty array. Pages are read independently, so paging this way
 *  over a soup being written can skip or repeat entries; a cursor has the same property.
 *  Free *out_entries_json with syncstore_free(). Errors: NOT_FOUND (soup), ARGUMENT (spec,
 *  negative page_index, Smart SQL past timeoutMs). Any thread. */
int syncstore_query_page(syncstore_store *store, const char *soup, const char *query_spec_json,
                         int64_t page_index, char **out_entries_json, syncstore_error *err);

/** Moves a cursor to a page (clamped to [0, totalPages-1]) and returns the cursor JSON. A cursor
 *  opened before syncstore_alter_soup() changed the indexes its query uses is planned again
 *  with the new ones (as the same query run afresh would be).
 *  Errors: NOT_FOUND (unknown or closed cursor, or its soup was removed); ARGUMENT (a Smart SQL
 *  page past timeoutMs). */
int syncstore_cursor_move_to_page(syncstore_store *store, int64_t cursor_id, int64_t page_index,
                                  char **out_cursor_json, syncstore_error *err);

/** Closes a cursor. Closing an unknown cursor is a no-op (OK). */
int syncstore_cursor_close(syncstore_store *store, int64_t cursor_id, syncstore_error *err);


/* ---------------------------------------------------------------------------------------------
 * Sync (MobileSync semantics)
 *
 * A store syncs with one remote: a server speaking the Salesforce REST API. Syncs are persisted
 * in the store (soup "syncs_soup") and identified by an integer id and an optional unique name.
 * A sync state is JSON: {"_soupEntryId" (= sync id), "type": "syncDown"|"syncUp", "name",
 * "target", "options", "soupName", "status": "NEW"|"RUNNING"|"DONE"|"FAILED"|"STOPPED",
 * "progress" (0-100), "totalSize" (-1 unknown, as at the start of every run), "maxTimeStamp" (epoch ms, -1 initially),
 * "startTime", "endTime", "error" ("" when none), "errorCode" (SYNCSTORE_ERR_*, 0 when none), "errorRetryable" (true when running it again unchanged may succeed),
 * "conflicts"; sync up also "errors", "conflictEntryIds", "errorEntryIds"}.
 * Server text in "error" and in entries' "__last_error__" is cut to about 4 KB (the cut says so);
 * an error body that is not the API's JSON appears only as a short plain-text summary.
 *
 * Partial success. A sync up whose run reached the end but left records dirty ends DONE with
 * "conflicts" (LEAVE_IF_CHANGED: the server copy changed since the local one was synced) and
 * "errors" (the server refused the record) counted, the _soupEntryIds of those records in
 * "conflictEntryIds" / "errorEntryIds" (at most 1000 each), "error" saying so and "errorCode"
 * SYNCSTORE_ERR_CONFLICT (only conflicts) or SYNCSTORE_ERR_SERVER. A clean run is DONE with
 * errorCode 0. Each such record keeps "__last_error__" (JSON) and stays dirty for the next run.
 *
 * Faults. A request that is harmless to send twice is sent again within the run when its
 * answer is lost (a dropped connection, a timeout) or is a 5xx, up to the remote's maxAttempts
 * with exponential backoff: reads (GET, and queries sent as POST), updates and upserts by
 * external id (PATCH), deletes. A create (POST, also a parent-children batch) is sent once:
 * when its answer is lost the run ends FAILED (NETWORK, retryable) and the next run of the sync
 * reconciles: creates sent without an answer are found on the server (by CreatedDate on the
 * server's own clock and the values sent) and adopted, not sent again. A request that fails on
 * every attempt ends the run FAILED (NETWORK, or SERVER for a 5xx). A sync down's maxTimeStamp
 * only moves to a point below which every record is stored, so a re-run after any
 * interruption misses nothing. A server that sends a page locator twice ends the run FAILED
 * (SERVER).
 *
 * Runs. Starting a run returns at once; the run happens on the store's sync worker thread (one
 * per store; runs of different syncs queue in order). One sync has at most one run at a time:
 * starting it again while queued or running is SYNCSTORE_ERR_BUSY. A sync is RUNNING (progress
 * 0) from the call that starts it, while its run waits in the queue too: starting a run saves
 * that first (STORAGE if it cannot; nothing is queued then). A run that was queued or running
 * when the process ended is STOPPED once the store opens again, and syncstore_restart_syncs()
 * runs it again. When a run's final state cannot be saved (a full disk), a run that succeeded
 * ends FAILED (STORAGE), one that failed or was stopped keeps its status and code, and the
 * terminal callback, syncstore_get_sync_status() and syncstore_wait_sync() all give that
 * state; it is saved by the sync's next run or when the store's last handle closes, and a
 * store opened before that shows the sync STOPPED.
 *
 * Processes. Several processes may open one store, but only one at a time runs its syncs: in
 * the others every sync call returns SYNCSTORE_ERR_BUSY (retryable) until the first closes the
 * store or exits (an advisory lock beside the database file, released by the kernel on exit).
 *
 * Callbacks. `callback(state_json, context)` is called for every state change of the run;
 * `state_json` is valid during the call only. Every run ends with exactly one terminal callback
 * (status DONE, FAILED or STOPPED). callback may be NULL (use syncstore_wait_sync() or
 * syncstore_get_sync_status()). Its thread and what it may call: see the next section.
 * ------------------------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------------------------
 * Callbacks, threads and close (the one statement of these rules; the rest of this header
 * refers here)
 *
 * Which thread. Each open store has one sync worker thread, started by its first run and ended
 * by the close of its last handle. It runs every callback the library makes for that store's
 * syncs, one at a time and never while the library holds a lock: the syncstore_sync_callback of
 * every run (each state change, and cleanResyncGhosts reports) and every syncstore_custom_target
 * callback (fetch_page for each page, the first and every later one; remote_ids; push_record).
 * A store in live sync (syncstore_start_live_sync()) has a live sync thread, which makes its
 * "state" callbacks (the runs it starts report on the worker thread, as any run).
 * Each open store also has one notifier thread, started by its first listener and ended by the
 * close of its last handle. It runs every syncstore_change_callback of that store (but those of
 * a buffered handle, which run where the host sends them) and every
 * syncstore_notifications_ready, one at a time, and never while the library holds a lock; it
 * also watches for other processes' commits while the store has listeners. No other thread of
 * the library calls host code; a call that starts a run, or a write, never calls back on the caller's thread (the
 * run's callbacks, or the write's notices, may begin before that call returns).
 *
 * Listeners. A listener hears, after committed write transactions that changed entries or
 * soups of the store, at most one notice per commit; of a rolled-back one, none. It hears the
 * commits made after it was added, until it is removed: through any handle of this process, by a
 * sync, and by other processes writing the same file (noticed within 50 ms of their commit, while
 * the store has a listener). A soup listener hears the commits that touched its soup (soup NULL:
 * every commit); a query listener hears only those that changed its query's result. A listener
 * has at most one notice pending: commits made while one waits (behind a callback in progress,
 * its minimum interval, or a buffered handle's next syncstore_send_notifications()) are merged
 * into it, so a listener never falls behind and a large pull is told per commit at most, not per
 * entry. Commits on one thread are heard in their order; "sequence" orders commits made on
 * different threads. change_json is valid during the call only. A soup listener's notice:
 *   {"sequence": n (the last commit it tells of: the store's commits in this process, increasing;
 *               other processes' commits are not numbered here: they carry this process's last),
 *    "commits": n (how many commits it tells of: more than 1 when merged; another process's
 *               commits seen by one look count as one),
 *    "origin": {"kind": "handle" (a write through the handle that added the listener) |
 *               "otherHandle" (another handle of this process) | "sync" (a sync run: "syncId"
 *               and "syncName" when known) | "otherProcess" (another process)} (the last
 *               commit's, when merged),
 *    "soups": [{"soup": name,
 *               "inserted": {"count": n, "ids": [_soupEntryId...], "cut": bool},
 *               "updated": {...}, "deleted": {...} (each: how many, the first 1000 ids, and
 *               "cut" true when ids were left out; an entry changed by two merged commits is
 *               counted in both),
 *               "cleared": bool (every entry was removed: no ids listed),
 *               "removed": bool (the soup itself was removed),
 *               "unknown": bool (another process changed it: which entries is not known, and
 *               the three lists may miss them)}, ...]}
 * "soups" lists the touched soups by name; a listener of one soup gets only that soup. A soup
 * listener stays when its soup is removed (it heard "removed": true) and hears the soup if one
 * of that name is registered again.
 * A query listener's notice adds the query's new result and how it differs from the result last
 * told (the first notice, made at once when the listener is added, has "origin": {"kind":
 * "initial"}, "commits": 0 and every row "added"):
 *   {"sequence", "commits", "origin" (as above),
 *    "totalEntries": n, "currentPageOrderedEntries": [the first page, as syncstore_query_soup()
 *    or syncstore_run_smart_query() answer it, pageSize rows at most],
 *    "added": {"count", "ids", "cut"}, "removed": {...}, "changed": {...}}
 * "ids" are _soupEntryIds of the entries that entered the result, left it, or changed in it.
 * A Smart SQL listener's rows have no ids: "added" and "removed" list rows ("rows" in place of
 * "ids", the first 1000), and a changed row is one removed and one added ("changed" is empty).
 * For exact, range, like and match specs the store judges a commit from the entries it changed
 * (work in proportion to the change, not to the result); Smart SQL, a cleared soup, a change of
 * more than 20,000 entries (merged commits included) or another process's change run the query again. A query listener whose
 * soup is removed hears once (every entry "removed", totalEntries 0), then nothing until it is
 * removed; one of a Smart SQL query hears every change of the soups it names.
 * Gathering. When commits come while the notifier is still telling earlier ones, it waits 1 ms
 * for more before telling again, so a stream of small commits is told about once a millisecond
 * per listener (merged as above), not once per commit; a commit made while the notifier is idle
 * is told at once.
 * Delivery. By default a listener's callbacks run on the store's notifier thread (above). A
 * handle may instead buffer its listeners' notices (syncstore_buffer_notifications(), as
 * Couchbase Lite's buffered notifications): they are then called on the thread that calls
 * syncstore_send_notifications() through that handle, such as an app's UI thread or an event
 * loop.
 * Inside a callback. Any function may be called, on any store, with these exceptions on the
 * callback's own store (through any of its handles), which would wait for the callback itself
 * and so return SYNCSTORE_ERR_STATE at once, changing nothing: syncstore_close() and
 * syncstore_change_key() (from a sync or a listener callback), syncstore_wait_sync() (from a sync
 * callback; a listener callback may wait for a sync, and a sync callback must then not remove
 * that listener, which would wait for it). syncstore_open() inside any callback, of a store
 * whose last handle is closing, returns SYNCSTORE_ERR_BUSY (retryable) instead of waiting
 * for that close (which may be waiting for the callback). Runs started from a callback queue
 * behind the current one; deleting the running sync is BUSY. A write made in a listener callback
 * is heard later, as any other (after the current notice). A listener callback may add or remove
 * listeners, itself included: syncstore_remove_listener() there returns at once.
 *
 * Close. syncstore_close(h) first retires h: a call through h that starts after that, or races
 * the close and loses, returns SYNCSTORE_ERR_STATE (SYNCSTORE_ERR_NOT_FOUND for a cursor the
 * close has closed), never starts a run and never builds a new sync engine. The close then
 * stops every run started through h, queued or running, and waits for its terminal callback: a
 * callback in progress is not interrupted (a custom target callback must return). When close
 * returns, no callback of those runs is running or will be made, so their contexts may be
 * freed. Runs started through other handles of the store go on. Closing the last handle also
 * stops the store's other runs the same way, ends the worker thread, releases the store's sync
 * lock file and checkpoints the WAL; an open of the same store in this process that races it
 * waits until it has ended and then opens the store anew. So when close returns the store can
 * be opened again at once, here or in another process, and its syncs run there.
 * Listeners go with the handle that added them: closing it removes them as
 * syncstore_remove_listener() would (waiting for a callback of theirs in progress), so when
 * close returns none of their callbacks runs or will run. Closing the last handle removes every
 * listener of the store and ends its notifier thread; notices not yet delivered are dropped.
 * Tokens never removed need no call: they are released by those closes.
 * syncstore_send_notifications() inside a listener callback is STATE (it would call back
 * into itself); a buffered handle's notices pending at its close are dropped.
 * ------------------------------------------------------------------------------------------- */

/** Receives a change notice as JSON (see "Listeners" above), valid during the call. */
typedef void (*syncstore_change_callback)(const char *change_json, void *context);

/** A listener, as syncstore_add_soup_listener() made it; opaque, never dereferenced. */
typedef struct syncstore_listener_token syncstore_listener_token;

/**
 * Adds a listener: cb(change_json, context) is called on the store's notifier thread after
 * each commit it hears of (see "Listeners" and "Which thread" above).
 * soup_or_NULL: the soup to hear (it must exist), or NULL for every soup.
 * cb: required. context: passed to cb untouched; it must stay valid until the listener is
 *   removed (syncstore_remove_listener() or the close of the handle that added it).
 * out_token: receives the token (NULL on error); it belongs to the store, and to this handle:
 *   closing the handle removes the listener and releases the token.
 * Errors: ARGUMENT (NULL store, cb or out_token; soup not UTF-8), NOT_FOUND (soup), STATE (closed
 * store). The store is unchanged on any error.
 */
int syncstore_add_soup_listener(syncstore_store *store, const char *soup_or_NULL, syncstore_change_callback cb,
                                void *context, syncstore_listener_token **out_token, syncstore_error *err);

/**
 * Removes a listener (through any handle of its store) and releases its token. When it returns
 * no callback of that token runs or will run: a callback of it in progress on another thread
 * (the notifier, or the thread sending a buffered handle's notices) is waited for; one in
 * progress on the calling thread (a listener callback, removing itself or another listener) is
 * not: then it returns at once. Any thread.
 * Errors: ARGUMENT (NULL store or token), STATE (closed store; a token this store does not have:
 * removed already, removed with the close of its handle, or another store's). Nothing changes
 * on error.
 */
int syncstore_remove_listener(syncstore_store *store, syncstore_listener_token *token, syncstore_error *err);

/**
 * Adds a query listener: cb(change_json, context) is called when the result of the query changes
 * (see "Listeners" above): first at once, on the notifier thread, with the current result.
 * query_spec_json: a query spec as syncstore_query_soup() takes it, with "soupName" naming its
 *   soup (as the SDKs' QuerySpec holds it), or a Smart SQL spec as syncstore_run_smart_query()
 *   takes it; "pageSize" is the size of the page each notice carries.
 * cb, context, out_token: as syncstore_add_soup_listener().
 * Errors: ARGUMENT (NULL store, spec, cb or out_token; a spec the store cannot run: bad JSON,
 * a missing "soupName", Smart SQL that syncstore_run_smart_query() refuses,
 * an unknown soup in it included), NOT_FOUND ("soupName" names no soup), STATE (closed store).
 * The store is unchanged on any error.
 */
int syncstore_add_query_listener(syncstore_store *store, const char *query_spec_json, syncstore_change_callback cb,
                                 void *context, syncstore_listener_token **out_token, syncstore_error *err);

/**
 * Sets the least time between two notices of a listener (0, the default: none; PowerSync's
 * watch uses 30). Commits made within it are merged into one notice (see "Listeners"), told when
 * it has passed. Any thread.
 * Errors: ARGUMENT (NULL store or token; min_interval_ms < 0 or > 3600000), STATE (closed store;
 * a token this store does not have). Nothing changes on error.
 */
int syncstore_set_listener_interval(syncstore_store *store, syncstore_listener_token *token,
                                    int64_t min_interval_ms, syncstore_error *err);

/** Told that a buffered handle has notices to send; context as given. */
typedef void (*syncstore_notifications_ready)(void *context);

/**
 * Buffers the notices of the listeners of this handle (those added before and after): none is
 * called on the notifier thread any more; they wait for syncstore_send_notifications() through
 * this handle. When a notice becomes pending and none was since the last send, ready(context)
 * is called once, on the notifier thread (ready may be NULL: the host then sends when it likes).
 * The handle stays buffered until it is closed; calling this again replaces ready and context.
 * context must stay valid until the handle is closed.
 * Errors: ARGUMENT (NULL store), STATE (closed handle).
 */
int syncstore_buffer_notifications(syncstore_store *store, syncstore_notifications_ready ready,
                                   void *context, syncstore_error *err);

/**
 * Calls, on the calling thread, every notice pending for the listeners of this buffered handle,
 * one at a time, outside every library lock (a callback may call the library as from the notifier
 * thread). A query listener's change is judged here too (Smart SQL runs its query again, within
 * its time limit), and its first notice and a change may be told in the same call. *out_sent_or_NULL receives how many were called. Returns when they are done; notices
 * that become pending meanwhile wait for the next call (and call ready again).
 * Errors: ARGUMENT (NULL store), STATE (closed handle; a handle that is not buffered; a call
 * from inside a listener callback of this store).
 */
int syncstore_send_notifications(syncstore_store *store, int64_t *out_sent_or_NULL, syncstore_error *err);

/** Receives a sync state (or a cleanResyncGhosts report) as JSON, valid during the call. */
typedef void (*syncstore_sync_callback)(const char *state_json, void *context);

/**
 * Sets (or replaces) the store's remote:
 * {"instanceUrl": "https://host:port", "accessToken": "...", "apiVersion": "v62.0",
 *  "refreshToken"?, "clientId"?, "clientSecret"?, "tokenUrl"? (default instanceUrl +
 *  /services/oauth2/token), "authHeader"? (a header name, e.g. "X-ZUMO-AUTH", that carries the
 *  token as is instead of "Authorization: Bearer <token>"), "caBundle"? (PEM file), "verifyTls"? (default true),
 *  "connectTimeoutMs"? (10000), "stallTimeoutMs"? (30000), "maxAttempts"? (3),
 *  "retryBaseDelayMs"? (200), "createSettleMs"? (10000: how long after a create sent without
 *  an answer the server may still commit it; a sync up that does not find such a record waits
 *  until then and looks again before it sends the create anew or drops a local delete of it)}.
 * On HTTP 401 the token is refreshed once (when refreshToken and clientId are set) and the
 * request retried; if that fails the run ends FAILED with errorCode SYNCSTORE_ERR_AUTH: set new
 * credentials and reSync. Which requests are sent again after a lost answer or a 5xx, and how
 * often: see "Faults" above. Runs already started keep the remote they started with.
 * Errors: ARGUMENT.
 */
int syncstore_set_remote(syncstore_store *store, const char *remote_json, syncstore_error *err);

/**
 * Creates a sync down and starts its first run.
 * target_json, one of:
 *   {"type": "soql", "query": "SELECT ... FROM ..."} (also "maxBatchSize", 200-2000; "type" may be
 *     left out when "query" is given);
 *   {"type": "sosl", "query": "FIND ..."};
 *   {"type": "mru", "sobjectType", "fieldlist"} (recently used records);
 *   {"type": "refresh", "sobjectType", "fieldlist"} (the records already in the soup, fetched again);
 *   {"type": "parent_children", "parent": {"sobjectType", "soupName", "idFieldName"?,
 *     "modificationDateFieldName"?}, "parentFieldlist", "parentSoqlFilter"?, "children":
 *     {"sobjectType", "sobjectTypePlural", "soupName", "parentIdFieldName", "idFieldName"?,
 *     "modificationDateFieldName"?}, "childrenFieldlist", "relationshipType"?: "MASTER_DETAIL" |
 *     "LOOKUP"} (parents and their children in one SOQL with a child subquery, each to its soup;
 *     every run fetches the whole scope);
 *   {"type": "briefcase", "infos": [{"sobjectType", "fieldlist", "soupName", "idFieldName"?,
 *     "modificationDateFieldName"?}]} (the records a briefcase primes, per type to its soup);
 *   {"type": "layout", "sobjectType", "layoutType"?: "Full" | "Compact", "mode"?: "View" | "Edit",
 *     "formFactor"?, "recordTypeId"?} (one record: the UI API layout);
 *   {"type": "metadata", "sobjectType"} (one record: the object's describe);
 *   {"type": "datasync", "table", "filter"?} (a Datasync / Azure Mobile Apps table: GET
 *     /tables/{table} in (updatedAt, id) order, incremental, soft-deleted rows remove local
 *     entries; the remote's instanceUrl is the service URL, docs/sync.md#datasync);
 *   {"type": "twophase", "fetchUrl"?, "synchroniseUrl"?, "tables": [{"name", "soupName"?,
 *     "idKey"?, "timestampFormat"?: "datetime" | "iso8601"}]} (a server speaking the two-phase
 *     fetch/synchronise protocol, not Salesforce: every row of each table to its soup, rows the
 *     server no longer has deleted locally; docs/sync.md#two-phase);
 *   or a registered custom type (syncstore_register_custom_target()).
 *   Common keys: "idFieldName" (default "Id"), "modificationDateFieldName" (default
 *   "LastModifiedDate").
 * soup: must exist and have an index on the id field.
 * options_json: {"mergeMode": "OVERWRITE"|"LEAVE_IF_CHANGED", "fieldlist": [...]}, or NULL or ""
 *   (OVERWRITE).
 * sync_name: NULL, or a unique name (EXISTS if taken).
 * out_sync_id: receives the sync id (may be NULL).
 * Errors: ARGUMENT, NOT_FOUND (soup), EXISTS, STATE (stopped manager, closed store), STORAGE
 * (the sync or its start cannot be saved: nothing is created or queued then).
 */
int syncstore_sync_down(syncstore_store *store, const char *target_json, const char *soup,
                        const char *options_json, const char *sync_name,
                        syncstore_sync_callback callback, void *context, int64_t *out_sync_id,
                        syncstore_error *err);

/**
 * Creates a sync up and starts its first run. Entries with "__local__" set are pushed:
 * locally deleted -> DELETE, locally created (or without a server id) -> create, else update.
 * target_json (NULL or "" = defaults): {"type": "collection" (batches of up to 200, the default) |
 *   "single" | "datasync" (with "table": POST with a client-generated id, PUT/DELETE with
 *   If-Match, 409/412 conflicts carry the server entity; docs/sync.md#datasync) | a registered
 *   custom type, "createFieldlist"?, "updateFieldlist"?,
 *   "externalIdFieldName"? (creates become upserts on it), "sobjectType"? (else
 *   record.attributes.type), "idFieldName"?, "modificationDateFieldName"?, "maxBatchSize"?}, or
 *   {"type": "parent_children", "parent": {"sobjectType", "soupName", "idFieldName"?,
 *   "modificationDateFieldName"?}, "children": {"sobjectType", "soupName", "parentIdFieldName",
 *   "idFieldName"?}, "parentCreateFieldlist"?, "parentUpdateFieldlist"?,
 *   "childrenCreateFieldlist"?, "childrenUpdateFieldlist"?} (each parent with its dirty children
 *   in one composite request; a parent created offline is referenced by its children through
 *   parentIdFieldName and rewritten to its server id in the same transaction), or
 *   {"type": "twophase", ...} as for syncstore_sync_down (one fetch, then one synchronise call
 *   with the dirty entries as add/update/delete under client UUIDs and the gets; the newer
 *   last_update wins; docs/sync.md#two-phase).
 * Creates are never duplicated on the server, even when an answer is lost and the sync re-run.
 * An entry edited while its own sync up is in flight stays dirty with the new edit.
 * An entry that cannot be sent (no type: NO_SOBJECT_TYPE; a field or value the server refuses,
 * even when the server refuses a whole collections request for it: its records are then sent
 * one by one) is a per-record error on that entry (see Partial success); the others are sent.
 * LEAVE_IF_CHANGED compares the server record's modification date with the local copy's; a
 * local copy without one (a whole-entry upsert dropped it) is compared with the time of its last
 * local write ("_soupLastModifiedDate", on the server's clock as its answers give it): a server
 * change after the local edit is a conflict, an earlier one cannot be told apart and is
 * overwritten.
 * out_sync_id: receives the sync id (may be NULL).
 * Errors: as syncstore_sync_down.
 */
int syncstore_sync_up(syncstore_store *store, const char *target_json, const char *soup,
                      const char *options_json, const char *sync_name,
                      syncstore_sync_callback callback, void *context, int64_t *out_sync_id,
                      syncstore_error *err);

/** Creates a sync down without running it (status NEW); out_sync_id (may be NULL) receives
 *  its id. Errors: as syncstore_sync_down. */
int syncstore_create_sync_down(syncstore_store *store, const char *target_json, const char *soup,
                               const char *options_json, const char *sync_name,
                               int64_t *out_sync_id, syncstore_error *err);

/** Creates a sync up without running it (status NEW); out_sync_id (may be NULL) receives its
 *  id. Errors: as syncstore_sync_up. */
int syncstore_create_sync_up(syncstore_store *store, const char *target_json, const char *soup,
                             const char *options_json, const char *sync_name,
                             int64_t *out_sync_id, syncstore_error *err);

/**
 * Runs an existing sync again. A sync down fetches only records modified at or after its
 * maxTimeStamp (records sharing that millisecond are fetched again, so none is missed).
 * Errors: NOT_FOUND, BUSY (already queued or running), STATE, STORAGE (its start cannot be
 * saved; nothing is queued).
 */
int syncstore_resync(syncstore_store *store, int64_t sync_id, syncstore_sync_callback callback,
                     void *context, syncstore_error *err);

/** syncstore_resync by name; out_sync_id (may be NULL) receives its id. Errors: as
 *  syncstore_resync. */
int syncstore_resync_by_name(syncstore_store *store, const char *sync_name,
                             syncstore_sync_callback callback, void *context,
                             int64_t *out_sync_id, syncstore_error *err);

/**
 * Deletes local records that this sync down wrote, that are not locally modified, and whose
 * ids the server no longer returns for the target. Runs on the sync worker; the callback gets
 * {"syncId", "type": "cleanResyncGhosts", "status": "RUNNING"|"DONE"|"FAILED"|"STOPPED",
 * "removed": n, "error", "errorCode", "errorRetryable"}; the sync's own state is not changed.
 * Errors: NOT_FOUND, ARGUMENT (not a sync down, or a twophase one: its runs delete them), BUSY,
 * STATE.
 */
int syncstore_clean_resync_ghosts(syncstore_store *store, int64_t sync_id,
                                  syncstore_sync_callback callback, void *context,
                                  syncstore_error *err);

/** The sync's state JSON. Errors: NOT_FOUND. */
int syncstore_get_sync_status(syncstore_store *store, int64_t sync_id, char **out_state_json,
                              syncstore_error *err);

/** The state of the sync with that name. Errors: NOT_FOUND. */
int syncstore_get_sync_status_by_name(syncstore_store *store, const char *sync_name,
                                      char **out_state_json, syncstore_error *err);

/** Deletes a sync's state (not its records). Errors: NOT_FOUND, BUSY (running). */
int syncstore_delete_sync(syncstore_store *store, int64_t sync_id, syncstore_error *err);

/** syncstore_delete_sync by name. */
int syncstore_delete_sync_by_name(syncstore_store *store, const char *sync_name,
                                  syncstore_error *err);

/**
 * Stops every queued and running sync of the store: transfers are cancelled, no partial page
 * is committed, runs end STOPPED (within about a second). New runs are refused (STATE) until
 * syncstore_restart_syncs(). Does not wait; use syncstore_wait_sync().
 */
int syncstore_stop_syncs(syncstore_store *store, syncstore_error *err);

/** Accepts runs again; with restart_stopped=1 re-runs every STOPPED sync (stopped by
 *  syncstore_stop_syncs(), or queued or running when a process ended), reporting to callback
 *  (one that another call started meanwhile is left to that run, not an error).
 *  Errors: STORAGE (a run's start cannot be saved; the syncs started before it run). */
int syncstore_restart_syncs(syncstore_store *store, int restart_stopped,
                            syncstore_sync_callback callback, void *context,
                            syncstore_error *err);

/**
 * Starts live sync (docs/sync.md#live-sync): the store's syncs run by themselves. At once, and
 * after each time the server was unreachable, every chosen sync up runs, then every sync down
 * ("catching up"); then each host write (of any handle or process) to a soup a chosen sync up
 * pushes runs that sync up once writes have paused for debounceMs; sync downs run again every
 * pullIntervalMs (0: only when catching up). With changeEvents (the default, and a remote set),
 * SOQL sync downs are also kept current by Change Data Capture events over the Streaming API:
 * a thread of the live sync holds a long poll on the change channels of their objects and each
 * event's records are fetched by id (or removed) in a run of the sync, merge mode kept; the
 * replay id applied is kept in the store, so a live sync started again resumes where it
 * stopped (docs/sync.md#change-events). A run failing with a retryable error makes live sync "offline" until a
 * retry time that doubles from retryMinMs up to retryMaxMs, with jitter; other failures are
 * reported and wait for the next write. Runs are ordinary runs of those syncs (one at a time
 * per sync; their states and the sync's callbacks as syncstore_resync() gives them).
 * options_json_or_NULL: {"syncs": [names] (default: every named sync), "debounceMs": 300,
 *   "retryMinMs": 1000, "retryMaxMs": 60000, "pullIntervalMs": 0, "changeEvents": true}; any
 *   other key is ARGUMENT.
 * cb (may be NULL) receives events as JSON, valid during the call:
 *   {"event": "state", "state": "connecting" | "catchingUp" | "live" | "offline" | "stopped",
 *    "nextRetryAt"?: epoch ms (offline), "error"?: the last failure, "syncs": [ids],
 *    "changeEvents"?: (when streaming, until stopped) {"state": "connecting" | "live" |
 *    "offline" | "unavailable" (the server has no Streaming API) | "stopped", "channels":
 *    [subscribed channels], "events": received, "skipped"?: unreadable events, "lastEventAt"?:
 *    epoch ms, "nextRetryAt"?: epoch ms (offline), "error"?}},
 *   called on the live sync's own thread (one per store, ended by stop or close), and
 *   {"event": "run", "sync": the sync state} for every state change of every run it starts,
 *   on the sync worker thread. A state may repeat ("live" after every round of runs, and at
 *   each change of "changeEvents"). The
 *   rules of "Callbacks, threads and close" hold for both; a live sync callback may call
 *   syncstore_stop_live_sync(). context must stay valid until this handle is closed (a run
 *   live sync started just before a stop reports until it ends).
 * Live sync belongs to this handle: closing it stops live sync (any handle may stop it).
 * Errors: ARGUMENT (bad options; no sync to run), NOT_FOUND (a name in "syncs"), STATE (live
 * sync is on already; closed store; a read-only store), BUSY (a stop is under way; another
 * process runs this store's syncs; no thread could be started).
 */
int syncstore_start_live_sync(syncstore_store *store, const char *options_json_or_NULL, syncstore_sync_callback cb,
                              void *context, syncstore_error *err);

/** Stops live sync (whichever handle started it) and returns when its thread has ended (at once
 *  from its own callback; with change events on, within about a second: the long poll sees the
 *  stop at libcurl's next progress check): it starts no run after that; a run it started ends as any run does,
 *  reporting to its callback. The last state event is "stopped". A store without live sync:
 *  no-op. Errors: STATE (closed store). */
int syncstore_stop_live_sync(syncstore_store *store, syncstore_error *err);

/** The live sync state as syncstore_start_live_sync()'s "state" event has it (state "stopped"
 *  when off). *out_json is freed with syncstore_free(). Errors: STATE (closed store). */
int syncstore_get_live_sync_state(syncstore_store *store, char **out_json, syncstore_error *err);

/**
 * Blocks the calling thread until the sync has no queued or running run, then returns its
 * state JSON (out_state_json may be NULL). timeout_ms < 0 waits without limit.
 * Errors: BUSY (timed out), NOT_FOUND, STATE (called from a callback of the same store).
 */
int syncstore_wait_sync(syncstore_store *store, int64_t sync_id, int64_t timeout_ms,
                        char **out_state_json, syncstore_error *err);

/** Creates the syncs of a usersyncs.json / globalsyncs.json file ({"syncs": [{"syncName",
 *  "syncType", "soupName", "target", "options"}]}); existing names are skipped. All or nothing:
 *  every sync is checked first and all are saved in one transaction, so a file with one bad
 *  sync (the message names it) creates none.
 *  Errors: ARGUMENT, NOT_FOUND (the file, a soup), STORAGE. */
int syncstore_load_sync_config(syncstore_store *store, const char *path, syncstore_error *err);

/**
 * A target type implemented by the host, for backends that are not Salesforce. Every callback
 * runs on the store's sync worker thread (see "Callbacks, threads and close") and returns 0 or a
 * SYNCSTORE_ERR_* code (filling err).
 * Strings a callback returns through out parameters must be allocated with malloc(); the
 * library frees them with free(). Unused callbacks may be NULL.
 * What a callback returns is held to the JSON rule (see the conventions at the top): text that
 * is not UTF-8 or breaks the rule fails the run with ARGUMENT, the message naming the callback
 * (and a record's Id); it is never repaired. An out string left NULL or "" is no result:
 * push_record's then means {}; fetch_page and remote_ids must return one.
 */
typedef struct syncstore_custom_target {
    /** Passed back to every callback; must stay valid while the store is open. */
    void *context;
    /** Sync down: one page. since_ms is the previous maxTimeStamp (-1: everything);
     *  continuation is NULL for the first page, else the "next" of the previous page.
     *  *out_page_json = {"records": [...], "totalSize"?: n, "next"?: "continuation"}. */
    int (*fetch_page)(void *context, const char *target_json, int64_t since_ms,
                      const char *continuation, char **out_page_json, syncstore_error *err);
    /** cleanResyncGhosts: *out_ids_json = JSON array of every id the backend has. */
    int (*remote_ids)(void *context, const char *target_json, char **out_ids_json,
                      syncstore_error *err);
    /** Sync up: action is "create", "update" or "delete"; for a create set *out_result_json to
     *  {"id": "backend id"}. Returning SYNCSTORE_ERR_SERVER or SYNCSTORE_ERR_CONFLICT records
     *  the message on the entry ("__last_error__") and goes on; other codes fail the run. */
    int (*push_record)(void *context, const char *target_json, const char *action,
                       const char *record_json, char **out_result_json, syncstore_error *err);
} syncstore_custom_target;

/** Registers `type` (not a built-in name) on the store; the struct is copied.
 *  Errors: ARGUMENT. */
int syncstore_register_custom_target(syncstore_store *store, const char *type,
                                     const syncstore_custom_target *target, syncstore_error *err);

/* ---------------------------------------------------------------------------------------------
 * The hybrid plugins (the native half of Cordova's and React Native's SmartStore and MobileSync)
 *
 * One dispatcher answers the calls the Mobile SDK's hybrid JavaScript makes: cordova.force.js
 * sends cordova.exec(success, fail, service, action, args), and a host forwards service, action
 * and the args array (as JSON) to syncstore_plugin_exec(). Services and actions:
 *   "com.salesforce.smartstore": pgRegisterSoup, pgRemoveSoup, pgSoupExists, pgGetSoupIndexSpecs,
 *     pgAlterSoup, pgReIndexSoup, pgClearSoup, pgQuerySoup, pgRunSmartQuery,
 *     pgRetrieveSoupEntries, pgUpsertSoupEntries, pgRemoveFromSoup, pgMoveCursorToPageIndex,
 *     pgCloseCursor, pgGetDatabaseSize, pgGetAllStores, pgGetAllGlobalStores, pgRemoveStore,
 *     pgRemoveAllStores, pgRemoveAllGlobalStores, pgShowInspector, loadStoreConfig, and this
 *     library's store listeners: pgAddSoupListener, pgAddQueryListener, pgRemoveListener;
 *   "com.salesforce.mobilesync": syncDown, syncUp, reSync, cleanResyncGhosts, getSyncStatus,
 *     deleteSync, resetSyncManager, loadSyncConfig, and this library's live sync:
 *     startLiveSync, stopLiveSync, getLiveSyncState;
 *   "com.salesforce.oauth": getAuthCredentials, authenticate (the default remote's credentials),
 *     getAppHomeUrl;
 *   "com.salesforce.network": pgSendRequest (force.js's REST requests, sent to the default
 *     remote's instance with its token, on the calling thread);
 *   "com.salesforce.sdkinfo": getInfo, registerAppFeature, unregisterAppFeature.
 * args is the array cordova.force.js builds: one object with the action's fields and the
 * storeConfig's "isGlobalStore" / "storeName" (missing: the user store "smartstore"), optionally
 * preceded by its "pluginSDKVersion:<version>" string. Answers, fields and error strings are the
 * plugins' own (docs/hybrid-plugin.md lists them per action). A plugin handle opens the stores
 * the actions name, under its root directory, on first use, and keeps them open until
 * syncstore_plugin_free(); cursors are the plugin's ("cursorId" in the cursor objects).
 * ------------------------------------------------------------------------------------------- */

/** A plugin dispatcher: its root directory, its open stores, remotes, keys and listener. Opaque. */
typedef struct syncstore_plugin syncstore_plugin;

/**
 * Receives the answer of one syncstore_plugin_exec() call. status is SYNCSTORE_OK for the
 * plugin's success, else the SYNCSTORE_ERR_* code of its error. On success `json` is the JSON
 * text of the success value (pass it to the success function): every action answers one, as the
 * platforms' plugins deliver it, "OK" where they have nothing else to say (cordova-android's
 * success()); on error it is the plugin's error message as a JSON string (what the fail function
 * receives). `json` is valid during the call only.
 */
typedef void (*syncstore_plugin_answer)(void *context, int status, const char *json);

/**
 * Receives a document event the plugins fire: event "sync" with the sync state (plus
 * "isGlobalStore" and "storeName") as `detail_json`, for every state change of every run
 * started through the plugin; event "smartstoreChanged" with a listener's notice (see
 * "Listeners"; plus "listenerId", "isGlobalStore" and "storeName") for the listeners added
 * with pgAddSoupListener / pgAddQueryListener; event "liveSync" with a live sync state event
 * (see syncstore_start_live_sync(); plus "isGlobalStore" and "storeName"). Valid during the
 * call only.
 */
typedef void (*syncstore_plugin_event)(void *context, const char *event, const char *detail_json);

/**
 * Gives the key of a store about to be opened (the SDK's encryption key generator): store_json
 * is {"storeName", "isGlobalStore"}. Set *out_key to a malloc'd key ("passphrase" or
 * "x'<64 hex>'") or leave it NULL for a plaintext store; *out_kdf_iter may be set (0: the
 * default, 256000; the Mobile SDK uses 4000). Return 0, or a SYNCSTORE_ERR_* code (the action
 * then fails with that code and err's message). Called on the thread that called
 * syncstore_plugin_exec(), once per open of a store.
 */
typedef int (*syncstore_plugin_key_provider)(void *context, const char *store_json, char **out_key,
                                             int *out_kdf_iter, syncstore_error *err);

/**
 * Creates a dispatcher whose stores live under root_dir (as syncstore_open()). options_json
 * (optional): {"remote": {...}} the default remote of every store it opens (the logged-in
 * user's credentials: syncstore_set_remote()'s JSON). *out is freed with syncstore_plugin_free().
 * Errors: ARGUMENT.
 */
int syncstore_plugin_new(const char *root_dir, const char *options_json, syncstore_plugin **out,
                         syncstore_error *err);

/**
 * Sets the remote (syncstore_set_remote()'s JSON) of one store (store_json {"storeName",
 * "isGlobalStore"}) or, with store_json NULL, the default of every store without its own.
 * Every run started after it uses it, in stores already open too. A store's sync engine (and the
 * store's sync lock, see "Processes") is taken by its first sync action, not by entry actions.
 * Errors: ARGUMENT, STATE (freed plugin).
 */
int syncstore_plugin_set_remote(syncstore_plugin *plugin, const char *store_json,
                                const char *remote_json, syncstore_error *err);

/**
 * Sets the listener of the plugin's document events (NULL removes it). It is called on the
 * stores' sync worker threads ("sync"), notifier threads ("smartstoreChanged") and live sync
 * threads ("liveSync"; see
 * "Callbacks, threads and close"); context must stay valid
 * until it is replaced or the plugin is freed. Errors: STATE.
 */
int syncstore_plugin_set_listener(syncstore_plugin *plugin, syncstore_plugin_event listener,
                                  void *context, syncstore_error *err);

/** Sets the key provider (NULL: stores open without a key). Stores already open keep their key.
 *  Errors: STATE. */
int syncstore_plugin_set_key_provider(syncstore_plugin *plugin, syncstore_plugin_key_provider provider,
                                      void *context, syncstore_error *err);

/**
 * Runs one plugin action. answer is called exactly once: before this call returns for every
 * action but cleanResyncGhosts, whose answer (the number of entries removed) comes from the
 * store's sync worker thread when the clean ends. syncDown, syncUp and reSync answer with the
 * state of the run they started; its progress comes as "sync" events (the first of which may
 * reach the listener before the answer: set the listener first). Returns SYNCSTORE_OK when
 * answer was or will be called (the action's own outcome is in the answer), else the code of a
 * call that could not be made (a NULL plugin or answer: ARGUMENT; a freed plugin: STATE) and
 * answer is not called.
 */
int syncstore_plugin_exec(syncstore_plugin *plugin, const char *service, const char *action,
                          const char *args_json, syncstore_plugin_answer answer, void *context,
                          syncstore_error *err);

/**
 * The plugins' JavaScript half as data: what cordova.force.js does before cordova.exec, so that a
 * host builds its smartstore / mobilesync functions from it instead of writing them again
 * (docs/hybrid-plugin.md, "The JavaScript half"). *out_json is a JSON object:
 *   "services": {"smartstore" | "mobilesync": {"service", "functions", "noStore", ...}}: per
 *     Cordova function its "name", the "action" it sends, "args" (its positional arguments in
 *     order: a field name, or {"name", "field", "member", "optional", "omittedWhen", "default"}),
 *     "fixed" fields, "storeConfig" (it takes the optional leading storeConfig), "removes",
 *     "run", "later" and "nullUnless"; "cursorSteps" (moveCursorToNextPage / PreviousPage) and
 *     "noStore" (the actions that open no store: no key is needed for them);
 *   "querySpec": {"fields" (every member with its default), "falsyKeepsDefault", "orderPathFrom",
 *     "builders" (buildAllQuerySpec...: "queryType" and "params" in order)};
 *   "syncStatuses": {"terminal"}; "statuses": [{"code", "name", "retryable"}], every status code
 *     with its name and whether a plugin answer of that status is retryable (an answer carries
 *     its code and message only).
 * The same text on every call for one library; new members may be added. Free *out_json with
 * syncstore_free(). Any thread; needs no plugin. Errors: ARGUMENT (out_json NULL).
 */
int syncstore_plugin_api(char **out_json, syncstore_error *err);

/**
 * Closes the stores the plugin opened (stopping their runs, as syncstore_close()) and frees it.
 * NULL is a no-op. Not from a callback of the plugin's own stores (STATE). Errors: STATE.
 */
int syncstore_plugin_free(syncstore_plugin *plugin, syncstore_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SYNCSTORE_H */
