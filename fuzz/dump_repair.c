/* Checksum repair for the dump_parser target: see dump_repair.h. */
#include "fuzz/dump_repair.h"

#include "debug/dump_format.h"

static int put32_changed(uint8_t *p, uint32_t v)
{
    uint32_t old = rpd_get32(p);
    rpd_put32(p, v);
    return old != v;
}

static int put64_changed(uint8_t *p, uint64_t v)
{
    uint64_t old = rpd_get64(p);
    rpd_put64(p, v);
    return old != v;
}

int dump_repair_checksums(uint8_t *buf, size_t len)
{
    if (len < RPD_HEADER_BYTES)
        return 0;
    int changed = put32_changed(buf + 28, rpd_crc32c(0, buf, 28));
    if (len < RPD_HEADER_BYTES + RPD_FOOTER_BYTES)
        return changed;
    uint8_t *footer = buf + len - RPD_FOOTER_BYTES;
    uint64_t end = len - RPD_FOOTER_BYTES; /* where the table must end */
    changed |= put64_changed(footer + 8, len);
    uint64_t count = rpd_get32(footer + 16);
    uint64_t table = rpd_get64(footer);
    if (count * RPD_ENTRY_BYTES > end - RPD_HEADER_BYTES)
        return changed | put32_changed(footer + 28, rpd_crc32c(0, footer, 28));
    if (table + count * RPD_ENTRY_BYTES != end) {
        table = end - count * RPD_ENTRY_BYTES;
        changed |= put64_changed(footer, table);
    }
    for (uint64_t i = 0; i < count; i++) {
        uint8_t *e = buf + table + i * RPD_ENTRY_BYTES;
        uint64_t off = rpd_get64(e + 8), n = rpd_get64(e + 16);
        if (off <= len && n <= len - off)
            changed |= put32_changed(e + 36, rpd_crc32c(0, buf + off, (size_t)n));
    }
    changed |= put32_changed(footer + 20, rpd_crc32c(0, buf + table, (size_t)(count * RPD_ENTRY_BYTES)));
    return changed | put32_changed(footer + 28, rpd_crc32c(0, footer, 28));
}
