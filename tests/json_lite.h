/* A minimal JSON reader for tests that check rpdump --json output: parses a document into a
 * tree and looks values up by path ("heaps.0.live.blocks"). Numbers keep their text, so
 * 64-bit integers are exact. Strict enough to reject malformed output. */
#ifndef RP_TESTS_JSON_LITE_H
#define RP_TESTS_JSON_LITE_H

#include <stddef.h>
#include <stdint.h>

enum { JV_NULL, JV_BOOL, JV_NUMBER, JV_STRING, JV_ARRAY, JV_OBJECT };

typedef struct jv {
    int type;
    int boolean;
    char *text;          /* number text or decoded string */
    size_t n;            /* array or object members */
    struct jv **items;
    char **keys;         /* objects */
} jv;

/* NULL on a syntax error (err receives a message). */
jv *jv_parse(const char *text, char *err, size_t len);
void jv_free(jv *v);

const jv *jv_get(const jv *v, const char *key);       /* object member or NULL */
const jv *jv_at(const jv *v, size_t i);               /* array element or NULL */
const jv *jv_path(const jv *v, const char *path);     /* dot path; numbers index arrays */
uint64_t jv_u64(const jv *v);                         /* 0 for non-numbers */
double jv_num(const jv *v);
const char *jv_str(const jv *v);                      /* "" for non-strings */
size_t jv_len(const jv *v);                           /* members; 0 for scalars */

#endif
