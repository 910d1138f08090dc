/* A minimal assertion helper for the C tests: counts checks, prints failures with their line,
 * ends with the "N passed, N failed" line CTest logs show. */
#ifndef SYNCSTORE_TEST_CHECK_H
#define SYNCSTORE_TEST_CHECK_H
#include <jansson.h>
#include <syncstore.h>

extern int check_passed, check_failed;

void check_true(int ok, const char *what, const char *file, int line);
/* A status equals the expected one; prints the error message when not. */
void check_status(int got, int expected, const syncstore_error *err, const char *what, const char *file, int line);
int check_finish(void);

/* Parses library JSON output (and frees it); NULL on failure. */
json_t *check_parse(char *text);
/* Makes an empty directory for a test's stores. */
void check_fresh_dir(const char *path);

#define CHECK(cond) check_true((cond) != 0, #cond, __FILE__, __LINE__)
#define EXPECT(status, expected, err) check_status((status), (expected), (err), #status, __FILE__, __LINE__)


/* A JSON string's text, or "" for anything else. */
#define str_or_empty(value) (json_string_value(value) ? json_string_value(value) : "")
#endif
