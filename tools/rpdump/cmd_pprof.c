/* rpdump pprof: the live sites of a dump as a heap profile in the text format gperftools'
 * pprof reads (google-pprof --text PROGRAM FILE, --pdf, --callgrind, ...):
 *
 *     heap profile: BLOCKS: BYTES [BLOCKS: BYTES] @ heapprofile
 *     BLOCKS: BYTES [BLOCKS: BYTES] @ 0xPC 0xPC ...      one line per stack, innermost first
 *     MAPPED_LIBRARIES:
 *     START-END r-xp OFFSET 00:00 0 PATH                  the dump's executable mappings
 *
 * The bracketed pair is pprof's "allocated" column; a dump knows only what is live, so both
 * pairs hold the live figures. "@ heapprofile" tells pprof the counts are exact (no sampling
 * adjustment). pprof finds the libraries by the mapping lines and symbolises them itself; it
 * needs the program's path on its command line for the main executable.
 *
 * With --symbols the profile carries its own names (rpdump's symbolisation, frame_label.h)
 * in a leading "--- symbol" section, and pprof reads it without any binary:
 * google-pprof --text FILE. Counted from samples (sites.h), the figures are the rounded
 * estimates, so the header still says "heapprofile": pprof must not scale them again.
 * Blocks without a stack are one pseudo frame, 0x1 "[no stack]"
 * (0x2 "[unknown stack]" for ids missing from the dump, 0x3 "[empty stack]"). */
#include <stdlib.h>
#include <string.h>

#include "frame_label.h"
#include "sites.h"
#include "text_out.h"

static uint64_t pseudo_pc(size_t site, unsigned nframes)
{
    return site == SITE_NO_STACK ? 1 : site == SITE_UNKNOWN_STACK ? 2 : nframes == 0 ? 3 : 0;
}

static const char *pseudo_name(uint64_t pc)
{
    return pc == 1 ? "[no stack]" : pc == 2 ? "[unknown stack]" : "[empty stack]";
}

typedef struct ranked_site {
    size_t site;
    uint64_t bytes;
} ranked_site;

static int by_bytes(const void *a, const void *b)
{
    const ranked_site *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->site < y->site ? -1 : 1;
}

static int by_pc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The "--- symbol" section: a name for every pc the profile names, each once. */
static int write_symbols(FILE *f, const rpd_dump *d, const live_sites *ls, symbolizer *sym)
{
    size_t total = 4;
    for (size_t s = 0; s < ls->nsites; s++) {
        unsigned n;
        if (ls->stats[s].blocks && live_sites_frames(ls, s, &n))
            total += n;
    }
    uint64_t *pcs = malloc(total * sizeof *pcs);
    if (!pcs)
        return -1;
    size_t count = 0;
    for (size_t s = 0; s < ls->nsites; s++) {
        if (!ls->stats[s].blocks)
            continue;
        unsigned n;
        const uint64_t *frames = live_sites_frames(ls, s, &n);
        uint64_t p = pseudo_pc(s, n);
        if (p)
            pcs[count++] = p; /* at most one of each kind: the special sites are single */
        for (unsigned i = 0; i < n; i++)
            pcs[count++] = frames[i];
    }
    qsort(pcs, count, sizeof *pcs, by_pc);
    char clean[RPD_EXE_BYTES];
    fprintf(f, "--- symbol\nbinary=%s\n", label_clean(clean, sizeof clean, d->process.exe, NULL));
    for (size_t i = 0; i < count; i++) {
        if (i && pcs[i] == pcs[i - 1])
            continue;
        char label[1024];
        if (pcs[i] && pcs[i] <= 3) {
            fprintf(f, "0x%llx %s\n", (unsigned long long)pcs[i], pseudo_name(pcs[i]));
            continue;
        }
        frame_text t;
        sym_get(sym, d, pcs[i], &t);
        fprintf(f, "0x%llx %s\n", (unsigned long long)pcs[i], frame_label(label, sizeof label, &t, pcs[i]));
    }
    fputs("---\n", f);
    free(pcs);
    return 0;
}

static void write_maps(FILE *f, const rpd_dump *d)
{
    fputs("\nMAPPED_LIBRARIES:\n", f);
    for (size_t i = 0; i < d->nmappings; i++) {
        const rpd_mapping_info *m = &d->mappings[i];
        if (m->path[0] != '/')
            continue; /* the vDSO and other objects without a file */
        char clean[RPD_MAX_PATH + 1];
        fprintf(f, "%012llx-%012llx r-xp %08llx 00:00 0 %s\n", (unsigned long long)m->m.start,
                (unsigned long long)m->m.end, (unsigned long long)m->m.file_offset,
                label_clean(clean, sizeof clean, m->path, NULL));
    }
}

int cmd_pprof(rpd_input *in, const rpd_options *o)
{
    rpd_dump *d = &in->dump;
    rpd_error err = {0, ""};
    live_sites ls;
    if (live_sites_load(&ls, d, o, &err) != 0) {
        live_sites_free(&ls);
        return rpd_report_error(o, in->path, &err);
    }
    ranked_site *order = malloc((ls.nsites ? ls.nsites : 1) * sizeof *order);
    if (!order) {
        live_sites_free(&ls);
        rpd_fail(&err, 0, "out of memory");
        return rpd_report_error(o, in->path, &err);
    }
    size_t n = 0;
    for (size_t s = 0; s < ls.nsites; s++)
        if (ls.stats[s].blocks)
            order[n++] = (ranked_site){s, ls.stats[s].bytes};
    qsort(order, n, sizeof *order, by_bytes);

    FILE *f = stdout;
    if (o->output && !(f = fopen(o->output, "w"))) {
        char clean[512];
        fprintf(stderr, "rpdump: cannot write %s\n", text_clean(clean, sizeof clean, o->output));
        free(order);
        live_sites_free(&ls);
        return RPDUMP_BAD_DUMP;
    }
    symbolizer *sym = NULL;
    if (o->symbols) {
        sym = sym_new(o->symbolizer);
        for (size_t s = SITE_FIRST_STACK; s < ls.nsites; s++) {
            unsigned nf;
            const uint64_t *frames = live_sites_frames(&ls, s, &nf);
            if (ls.stats[s].blocks)
                for (unsigned i = 0; i < nf; i++)
                    sym_want(sym, d, frames[i]);
        }
        sym_run(sym);
        if (write_symbols(f, d, &ls, sym) != 0) {
            fputs("--- symbol\n---\n", f); /* out of memory: still a profile, without names */
            fputs("rpdump: warning: out of memory naming the frames: the profile has no names\n", stderr);
        }
    }
    fprintf(f, "heap profile: %6llu: %8llu [%6llu: %8llu] @ heapprofile\n", (unsigned long long)ls.total.blocks,
            (unsigned long long)ls.total.bytes, (unsigned long long)ls.total.blocks, (unsigned long long)ls.total.bytes);
    for (size_t r = 0; r < n; r++) {
        const site_stats *s = &ls.stats[order[r].site];
        fprintf(f, "%6llu: %8llu [%6llu: %8llu] @", (unsigned long long)s->blocks, (unsigned long long)s->bytes,
                (unsigned long long)s->blocks, (unsigned long long)s->bytes);
        unsigned nf;
        const uint64_t *frames = live_sites_frames(&ls, order[r].site, &nf);
        uint64_t p = pseudo_pc(order[r].site, nf);
        if (p)
            fprintf(f, " 0x%llx", (unsigned long long)p);
        for (unsigned i = 0; i < nf; i++)
            fprintf(f, " 0x%llx", (unsigned long long)frames[i]);
        fputc('\n', f);
    }
    write_maps(f, d);
    sym_free(sym);
    int failed = ferror(f) != 0;
    if (f != stdout)
        failed |= fclose(f) != 0;
    if (failed) {
        char clean[512];
        fprintf(stderr, "rpdump: writing %s failed\n", o->output ? text_clean(clean, sizeof clean, o->output) : "the profile");
        free(order);
        live_sites_free(&ls);
        return RPDUMP_BAD_DUMP;
    }
    if (o->json) {
        json_out j;
        rpd_json_begin(&j, d, in->path);
        json_kv_string(&j, "output", o->output);
        json_kv_string(&j, "bytes_are", site_bytes_are(d, o));
        json_kv_bool(&j, "symbols", o->symbols);
        json_kv_u64(&j, "sites", n);
        json_kv_u64(&j, "samples", ls.total.samples);
        json_kv_u64(&j, "total_blocks", ls.total.blocks);
        json_kv_u64(&j, "total_bytes", ls.total.bytes);
        json_object_end(&j);
        json_finish(&j);
    } else if (o->output) {
        char clean[512];
        printf("wrote %s: %zu sites, %llu blocks, %llu bytes\n", text_clean(clean, sizeof clean, o->output), n,
               (unsigned long long)ls.total.blocks, (unsigned long long)ls.total.bytes);
    }
    free(order);
    live_sites_free(&ls);
    return RPDUMP_OK;
}
