#define _POSIX_C_SOURCE 200809L /* strndup */
#include "json_lite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const char *p;
    char *err;
    size_t len;
    int failed;
} parser;

static void fail(parser *ps, const char *what)
{
    if (!ps->failed && ps->err)
        snprintf(ps->err, ps->len, "%s near '%.20s'", what, ps->p);
    ps->failed = 1;
}

static void skip_space(parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\t' || *ps->p == '\r')
        ps->p++;
}

static jv *node(int type)
{
    jv *v = calloc(1, sizeof *v);
    if (v)
        v->type = type;
    return v;
}

static char *parse_string_text(parser *ps)
{
    if (*ps->p != '"') {
        fail(ps, "expected a string");
        return NULL;
    }
    ps->p++;
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    while (s && *ps->p && *ps->p != '"') {
        char c = *ps->p++;
        if (c == '\\') {
            char e = *ps->p++;
            if (e == 'u') {
                unsigned code = 0;
                for (int i = 0; i < 4; i++) {
                    char h = *ps->p++;
                    code = code * 16 + (unsigned)(h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : 0);
                }
                c = code < 0x80 ? (char)code : '?';
            } else {
                c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e;
            }
        } else if ((unsigned char)c < 0x20) {
            fail(ps, "control character in a string");
            free(s);
            return NULL;
        }
        if (n + 2 > cap) {
            char *bigger = realloc(s, cap *= 2);
            if (!bigger) {
                free(s);
                return NULL;
            }
            s = bigger;
        }
        s[n++] = c;
    }
    if (!s || *ps->p != '"') {
        fail(ps, "unterminated string");
        free(s);
        return NULL;
    }
    ps->p++;
    s[n] = 0;
    return s;
}

static jv *parse_value(parser *ps, int depth);

static int push(jv *v, jv *item, char *key)
{
    jv **items = realloc(v->items, (v->n + 1) * sizeof *items);
    if (!items)
        return -1;
    v->items = items;
    if (v->type == JV_OBJECT) {
        char **keys = realloc(v->keys, (v->n + 1) * sizeof *keys);
        if (!keys)
            return -1;
        v->keys = keys;
        v->keys[v->n] = key;
    }
    v->items[v->n++] = item;
    return 0;
}

static jv *parse_container(parser *ps, int depth, int type, char close)
{
    jv *v = node(type);
    ps->p++;
    skip_space(ps);
    if (*ps->p == close) {
        ps->p++;
        return v;
    }
    for (;;) {
        char *key = NULL;
        if (type == JV_OBJECT) {
            skip_space(ps);
            key = parse_string_text(ps);
            skip_space(ps);
            if (!key || *ps->p != ':') {
                free(key);
                fail(ps, "expected ':'");
                jv_free(v);
                return NULL;
            }
            ps->p++;
        }
        jv *item = parse_value(ps, depth + 1);
        if (!item || push(v, item, key) != 0) {
            free(key);
            jv_free(item);
            jv_free(v);
            return NULL;
        }
        skip_space(ps);
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p == close) {
            ps->p++;
            return v;
        }
        fail(ps, "expected ',' or a closing bracket");
        jv_free(v);
        return NULL;
    }
}

static jv *parse_value(parser *ps, int depth)
{
    skip_space(ps);
    if (depth > 64) {
        fail(ps, "too deep");
        return NULL;
    }
    char c = *ps->p;
    if (c == '{')
        return parse_container(ps, depth, JV_OBJECT, '}');
    if (c == '[')
        return parse_container(ps, depth, JV_ARRAY, ']');
    if (c == '"') {
        char *s = parse_string_text(ps);
        if (!s)
            return NULL;
        jv *v = node(JV_STRING);
        v->text = s;
        return v;
    }
    if (!strncmp(ps->p, "true", 4) || !strncmp(ps->p, "false", 5)) {
        jv *v = node(JV_BOOL);
        v->boolean = c == 't';
        ps->p += c == 't' ? 4 : 5;
        return v;
    }
    if (!strncmp(ps->p, "null", 4)) {
        ps->p += 4;
        return node(JV_NULL);
    }
    const char *start = ps->p;
    if (*ps->p == '-')
        ps->p++;
    while ((*ps->p >= '0' && *ps->p <= '9') || *ps->p == '.' || *ps->p == 'e' || *ps->p == 'E' || *ps->p == '+' ||
           *ps->p == '-')
        ps->p++;
    if (ps->p == start || (ps->p == start + 1 && *start == '-')) {
        fail(ps, "unexpected character");
        return NULL;
    }
    jv *v = node(JV_NUMBER);
    v->text = strndup(start, (size_t)(ps->p - start));
    return v;
}

jv *jv_parse(const char *text, char *err, size_t len)
{
    parser ps = {text, err, len, 0};
    jv *v = parse_value(&ps, 0);
    skip_space(&ps);
    if (v && *ps.p) {
        fail(&ps, "trailing text");
        jv_free(v);
        return NULL;
    }
    return ps.failed ? (jv_free(v), NULL) : v;
}

void jv_free(jv *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n; i++) {
        jv_free(v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->text);
    free(v);
}

const jv *jv_get(const jv *v, const char *key)
{
    if (!v || v->type != JV_OBJECT)
        return NULL;
    for (size_t i = 0; i < v->n; i++)
        if (!strcmp(v->keys[i], key))
            return v->items[i];
    return NULL;
}

const jv *jv_at(const jv *v, size_t i) { return v && v->type == JV_ARRAY && i < v->n ? v->items[i] : NULL; }

const jv *jv_path(const jv *v, const char *path)
{
    char part[128];
    while (v && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof part)
            return NULL;
        memcpy(part, path, n);
        part[n] = 0;
        if (v->type == JV_ARRAY)
            v = jv_at(v, (size_t)strtoul(part, NULL, 10));
        else
            v = jv_get(v, part);
        path += n;
        if (*path == '.')
            path++;
    }
    return v;
}

uint64_t jv_u64(const jv *v) { return v && v->type == JV_NUMBER ? strtoull(v->text, NULL, 10) : 0; }
double jv_num(const jv *v) { return v && v->type == JV_NUMBER ? strtod(v->text, NULL) : 0; }
const char *jv_str(const jv *v) { return v && v->type == JV_STRING ? v->text : ""; }
size_t jv_len(const jv *v) { return v && (v->type == JV_ARRAY || v->type == JV_OBJECT) ? v->n : 0; }
