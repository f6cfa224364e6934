#include "json_out.h"

#include <math.h>
#include <string.h>

void json_init(json_out *j, FILE *f)
{
    memset(j, 0, sizeof *j);
    j->f = f;
}

static int compact(const json_out *j) { return j->compact_from && j->depth >= j->compact_from; }

static void newline(json_out *j)
{
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++)
        fputs("  ", j->f);
}

/* Separator and indentation before a value or key at the current depth. */
static void before_value(json_out *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->depth == 0)
        return;
    if (j->count[j->depth]++)
        fputc(',', j->f);
    if (!compact(j))
        newline(j);
    else if (j->count[j->depth] > 1)
        fputc(' ', j->f);
}

static void open_container(json_out *j, char c, int compact_here)
{
    before_value(j);
    fputc(c, j->f);
    if (j->depth + 1 < JSON_MAX_DEPTH)
        j->depth++;
    j->count[j->depth] = 0;
    if (compact_here && !j->compact_from)
        j->compact_from = j->depth;
}

static void close_container(json_out *j, char c)
{
    int had = j->count[j->depth];
    int was_compact = compact(j);
    if (j->compact_from == j->depth)
        j->compact_from = 0;
    if (j->depth > 0)
        j->depth--;
    if (had && !was_compact)
        newline(j);
    fputc(c, j->f);
}

void json_object(json_out *j) { open_container(j, '{', 0); }
void json_object_compact(json_out *j) { open_container(j, '{', 1); }
void json_object_end(json_out *j) { close_container(j, '}'); }
void json_array(json_out *j) { open_container(j, '[', 0); }
void json_array_compact(json_out *j) { open_container(j, '[', 1); }
void json_array_end(json_out *j) { close_container(j, ']'); }
void json_finish(json_out *j) { fputc('\n', j->f); }

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_length(const unsigned char *s, size_t n)
{
    size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (!len || len > n || (len == 2 && s[0] < 0xc2))
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

static void put_string(json_out *j, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', j->f);
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            fputc('\\', j->f);
            fputc(c, j->f);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(j->f, "\\u%04x", c);
            i++;
        } else {
            size_t len = utf8_length(p + i, n - i);
            if (!len) {
                fprintf(j->f, "\\u%04x", c); /* a stray byte, shown as its Latin-1 code point */
                i++;
            } else {
                fwrite(p + i, 1, len, j->f);
                i += len;
            }
        }
    }
    fputc('"', j->f);
}

void json_key(json_out *j, const char *key)
{
    before_value(j);
    put_string(j, key, strlen(key));
    fputs(compact(j) ? ":" : ": ", j->f);
    j->after_key = 1;
}

void json_u64(json_out *j, uint64_t v)
{
    before_value(j);
    fprintf(j->f, "%llu", (unsigned long long)v);
}

void json_i64(json_out *j, int64_t v)
{
    before_value(j);
    fprintf(j->f, "%lld", (long long)v);
}

void json_double(json_out *j, double v)
{
    before_value(j);
    if (!isfinite(v))
        fputs("null", j->f);
    else
        fprintf(j->f, "%.6g", v);
}

void json_bool(json_out *j, int v)
{
    before_value(j);
    fputs(v ? "true" : "false", j->f);
}

void json_null(json_out *j)
{
    before_value(j);
    fputs("null", j->f);
}

void json_string(json_out *j, const char *s) { json_string_n(j, s, strlen(s)); }

void json_string_n(json_out *j, const char *s, size_t n)
{
    before_value(j);
    put_string(j, s, n);
}

void json_hex(json_out *j, uint64_t v)
{
    before_value(j);
    fprintf(j->f, "\"0x%llx\"", (unsigned long long)v);
}

void json_kv_u64(json_out *j, const char *key, uint64_t v) { json_key(j, key), json_u64(j, v); }
void json_kv_i64(json_out *j, const char *key, int64_t v) { json_key(j, key), json_i64(j, v); }
void json_kv_double(json_out *j, const char *key, double v) { json_key(j, key), json_double(j, v); }
void json_kv_bool(json_out *j, const char *key, int v) { json_key(j, key), json_bool(j, v); }
void json_kv_string(json_out *j, const char *key, const char *s) { json_key(j, key), json_string(j, s); }
void json_kv_hex(json_out *j, const char *key, uint64_t v) { json_key(j, key), json_hex(j, v); }
