#include "frame_label.h"

#include <stdio.h>
#include <string.h>

const char *label_clean(char *buf, size_t len, const char *s, const char *avoid)
{
    size_t n = 0;
    for (; s && *s && n + 1 < len; s++) {
        unsigned char c = (unsigned char)*s;
        buf[n++] = c >= 0x20 && c < 0x7f && !(avoid && strchr(avoid, c)) ? (char)c : '?';
    }
    if (len)
        buf[n] = 0;
    return buf;
}

const char *frame_module_name(const frame_text *t)
{
    if (!t->module || !t->module->path)
        return "";
    const char *slash = strrchr(t->module->path, '/');
    return slash ? slash + 1 : t->module->path;
}

const char *frame_label(char *buf, size_t len, const frame_text *t, uint64_t pc)
{
    if (t->function && t->function[0])
        return label_clean(buf, len, t->function, NULL);
    if (t->module) {
        char module[256];
        label_clean(module, sizeof module, frame_module_name(t), NULL);
        snprintf(buf, len, "%s+0x%llx", module[0] ? module : "?", (unsigned long long)t->offset);
        return buf;
    }
    snprintf(buf, len, "0x%llx", (unsigned long long)pc);
    return buf;
}
