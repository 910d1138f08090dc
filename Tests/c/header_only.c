/* Compiled with -std=c99 -pedantic -Werror: the header must stand alone in strict C. */
#include <syncstore.h>

int header_only_check(void);
int header_only_check(void) {
    syncstore_error err;
    err.code = SYNCSTORE_OK;
    return err.code + SYNCSTORE_ABI_VERSION - 1;
}
