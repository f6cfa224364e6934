/* The MAPPINGS section: every executable segment of every loaded ELF object, with the
 * object's path, load bias and GNU build-id, so stacks can be symbolised offline (and a
 * symboliser can tell whether the file it finds is the one that ran).
 *
 * dl_iterate_phdr gives, per object, the load bias and the program headers: PT_LOAD with
 * PF_X are the executable ranges, PT_NOTE holds NT_GNU_BUILD_ID. It neither allocates nor
 * reads files; the main program's path comes from /proc/self/exe. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "debug/dump_internal.h"

typedef struct mapping_writer {
    rpd_encoder *e;
    char exe[RPD_MAX_PATH + 1];
} mapping_writer;

static size_t align_up(size_t x, size_t a) { return (x + a - 1) & ~(a - 1); }

/* Copies the object's NT_GNU_BUILD_ID into out (at most RPD_MAX_BUILD_ID bytes); returns its
 * length, 0 if none. Notes are read in the loaded image, bounded by each PT_NOTE's size. */
static unsigned find_build_id(const struct dl_phdr_info *info, uint8_t *out)
{
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        size_t note_align = ph->p_align == 8 ? 8 : 4;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        size_t left = ph->p_memsz;
        while (left >= sizeof(ElfW(Nhdr))) {
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
            size_t name_bytes = align_up(n->n_namesz, note_align);
            size_t desc_bytes = align_up(n->n_descsz, note_align);
            size_t total = sizeof *n + name_bytes + desc_bytes;
            if (name_bytes < n->n_namesz || desc_bytes < n->n_descsz || total > left)
                break;
            const uint8_t *name = p + sizeof *n;
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
                n->n_descsz > 0) {
                unsigned len = n->n_descsz < RPD_MAX_BUILD_ID ? n->n_descsz : RPD_MAX_BUILD_ID;
                memcpy(out, name + name_bytes, len);
                return len;
            }
            p += total;
            left -= total;
        }
    }
    return 0;
}

static int put_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    mapping_writer *w = arg;
    const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : w->exe;
    size_t path_len = strnlen(path, RPD_MAX_PATH);
    uint8_t build_id[RPD_MAX_BUILD_ID];
    unsigned build_id_len = find_build_id(info, build_id);
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || ph->p_memsz == 0)
            continue;
        rpd_mapping m;
        memset(&m, 0, sizeof m);
        m.start = info->dlpi_addr + ph->p_vaddr;
        m.end = m.start + ph->p_memsz;
        m.load_bias = info->dlpi_addr;
        m.file_offset = ph->p_offset;
        m.flags = ph->p_flags;
        m.path_len = (uint16_t)path_len;
        m.build_id_len = (uint8_t)build_id_len;
        uint8_t head[RPD_MAPPING_HEAD_BYTES];
        rpd_mapping_head_encode(&m, head);
        static const uint8_t zeros[8];
        uint64_t record = rpd_mapping_record_bytes(build_id_len, (unsigned)path_len);
        rpd_enc_put(w->e, head, sizeof head);
        rpd_enc_put(w->e, build_id, build_id_len);
        rpd_enc_put(w->e, path, path_len);
        rpd_enc_record(w->e, zeros, (size_t)(record - RPD_MAPPING_HEAD_BYTES - build_id_len - path_len));
    }
    return w->e->error != 0;
}

void rpd_write_mappings(rpd_encoder *e)
{
    mapping_writer w;
    w.e = e;
    ssize_t n = readlink("/proc/self/exe", w.exe, sizeof w.exe - 1);
    w.exe[n > 0 ? n : 0] = 0;
    rpd_enc_begin(e, RPD_SEC_MAPPINGS, RPD_NO_HEAP, 0);
    dl_iterate_phdr(put_object, &w);
    rpd_enc_end(e);
}
