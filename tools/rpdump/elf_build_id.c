#define _GNU_SOURCE
#include "elf_build_id.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debug/dump_format.h" /* little-endian accessors */

#define PT_NOTE_TYPE 4
#define NT_GNU_BUILD_ID_TYPE 3
#define MAX_PHDRS 4096
#define MAX_NOTE_BYTES ((size_t)64 << 10)

static int read_at(int fd, uint64_t off, void *buf, size_t len)
{
    ssize_t n = pread(fd, buf, len, (off_t)off);
    return n == (ssize_t)len ? 0 : -1;
}

/* Scans one PT_NOTE segment's bytes for NT_GNU_BUILD_ID. */
static int scan_notes(const uint8_t *p, size_t len, size_t align, uint8_t *out, size_t cap)
{
    size_t at = 0;
    while (len - at >= 12) {
        uint32_t namesz = rpd_get32(p + at), descsz = rpd_get32(p + at + 4), type = rpd_get32(p + at + 8);
        size_t name_bytes = ((size_t)namesz + align - 1) & ~(align - 1);
        size_t desc_bytes = ((size_t)descsz + align - 1) & ~(align - 1);
        if (name_bytes > len - at - 12 || desc_bytes > len - at - 12 - name_bytes)
            return 0;
        const uint8_t *name = p + at + 12;
        if (type == NT_GNU_BUILD_ID_TYPE && namesz == 4 && memcmp(name, "GNU", 4) == 0) {
            size_t n = descsz < cap ? descsz : cap;
            memcpy(out, name + name_bytes, n);
            return (int)n;
        }
        at += 12 + name_bytes + desc_bytes;
    }
    return 0;
}

int elf_read_build_id(const char *path, uint8_t *out, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct stat st;
    uint8_t eh[64];
    int result = -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || read_at(fd, 0, eh, sizeof eh) != 0 ||
        memcmp(eh, "\x7f" "ELF", 4) != 0 || eh[4] != 2 /* 64-bit */ || eh[5] != 1 /* little-endian */)
        goto out;
    uint64_t phoff = rpd_get64(eh + 32);
    unsigned phentsize = rpd_get16(eh + 54), phnum = rpd_get16(eh + 56);
    if (phentsize < 56 || phnum > MAX_PHDRS)
        goto out;
    result = 0;
    for (unsigned i = 0; i < phnum && result == 0; i++) {
        uint8_t ph[56];
        if (read_at(fd, phoff + (uint64_t)i * phentsize, ph, sizeof ph) != 0)
            break;
        if (rpd_get32(ph) != PT_NOTE_TYPE)
            continue;
        uint64_t off = rpd_get64(ph + 8), filesz = rpd_get64(ph + 32), palign = rpd_get64(ph + 48);
        if (filesz == 0 || filesz > MAX_NOTE_BYTES || off > (uint64_t)st.st_size || filesz > (uint64_t)st.st_size - off)
            continue;
        uint8_t notes[MAX_NOTE_BYTES];
        if (read_at(fd, off, notes, (size_t)filesz) != 0)
            continue;
        result = scan_notes(notes, (size_t)filesz, palign == 8 ? 8 : 4, out, cap);
    }
out:
    close(fd);
    return result;
}
