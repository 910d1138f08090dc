/* Process-wide SQLite settings the library makes before its first connection (see
 * ss_sqlite_configure in cipher_vfs.h). sqlite3_config is variadic, which Swift cannot call. */
#include "cipher_vfs.h"

#include <pthread.h>
#include <sqlite3.h>

static int configureResult = SQLITE_MISUSE;

/* Memory statistics off: with them on, every sqlite3_malloc and free of every connection in the
 * process takes one global mutex, and a reader waits whenever the sync's writer or checkpoint
 * thread is preempted while holding it (reads on a store during a sync stalled up to 48 ms).
 * SQLite accepts this only before it is initialized; a host that has used SQLite already keeps
 * its setting (SQLITE_MISUSE, harmless). */
static void configureOnce(void) { configureResult = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

int ss_sqlite_configure(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, configureOnce);
    return configureResult;
}
