/* A small streaming JSON writer for rpdump --json. Keys and strings are escaped (control
 * characters, quotes, backslashes, and bytes that are not valid UTF-8 become \u00XX), so
 * hostile heap names or paths cannot break the document. Objects and arrays opened with the
 * _compact variants are written on one line (one block or site per line); the others put
 * each member on its own indented line. */
#ifndef RPDUMP_JSON_OUT_H
#define RPDUMP_JSON_OUT_H

#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

typedef struct json_out {
    FILE *f;
    int depth;
    int compact_from;            /* depth at which compact output starts (0 = none) */
    int count[JSON_MAX_DEPTH];   /* members written at each depth */
    int after_key;
} json_out;

void json_init(json_out *j, FILE *f);
void json_object(json_out *j);
void json_object_compact(json_out *j);
void json_object_end(json_out *j);
void json_array(json_out *j);
void json_array_compact(json_out *j);
void json_array_end(json_out *j);
/* Ends the document with a newline. */
void json_finish(json_out *j);

void json_key(json_out *j, const char *key);
void json_u64(json_out *j, uint64_t v);
void json_i64(json_out *j, int64_t v);
void json_double(json_out *j, double v); /* 6 significant digits; non-finite -> null */
void json_bool(json_out *j, int v);
void json_null(json_out *j);
void json_string(json_out *j, const char *s);
void json_string_n(json_out *j, const char *s, size_t n);
void json_hex(json_out *j, uint64_t v); /* "0x1a2b": addresses do not fit a double */

/* key + value in one call */
void json_kv_u64(json_out *j, const char *key, uint64_t v);
void json_kv_i64(json_out *j, const char *key, int64_t v);
void json_kv_double(json_out *j, const char *key, double v);
void json_kv_bool(json_out *j, const char *key, int v);
void json_kv_string(json_out *j, const char *key, const char *s);
void json_kv_hex(json_out *j, const char *key, uint64_t v);

#endif
