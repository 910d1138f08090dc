#ifndef SYNCSTORE_CJANSSON_SHIM_H
#define SYNCSTORE_CJANSSON_SHIM_H
#include <jansson.h>

/* json_typeof and friends are macros; these give Swift a callable form. */
static inline int cjansson_typeof(const json_t *json) { return (int)json_typeof(json); }
static inline void cjansson_decref(json_t *json) { json_decref(json); }
static inline json_t *cjansson_incref(json_t *json) { return json_incref(json); }
#endif
