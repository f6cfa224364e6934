#define _GNU_SOURCE
#include "debug_report.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "backtrace.h"
#include "config.h"
#include "cookie.h"
#include "debug_heap.h"
#include "owner.h"
#include "rampart_debug.h"
#include "report_sink.h"
#include "symbolize.h"

void rp_debug_fault(rp_fault *f, rp_error_kind kind, const rp_heap *h, const void *address, const void *block,
                    size_t block_size, const rp_debug_meta *meta, const char *fmt, ...)
{
    if (f->kind != 0)
        return;
    char message[sizeof f->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    rp_fault_set(f, kind, h, address, block, block_size, "%s", message);
    if (meta) {
        f->alloc_stack = meta->alloc_stack;
        f->free_stack = meta->free_stack;
        f->requested = (size_t)meta->requested;
    }
}

/* What each kind means, in one sentence after the header. access: 'R'/'W' when caught at the
 * access by a guard page. */
static const char *explain(rp_error_kind kind, int history_known, char access)
{
    if (access)
        return kind == RP_ERR_USE_AFTER_FREE ? "A guarded block was accessed after its free (its pages are inaccessible "
                                               "while it waits in quarantine)."
               : kind == RP_ERR_HEAP_BUFFER_UNDERFLOW
                   ? "An access before the start of a guarded block reached the guard page before it."
                   : "An access past the end of a guarded block reached the guard page after it.";
    switch (kind) {
    case RP_ERR_HEAP_BUFFER_OVERFLOW:
        return "The bytes after the requested size (trailer cookie) were overwritten: a write past the end "
               "of the block.";
    case RP_ERR_HEAP_BUFFER_UNDERFLOW:
        return "The canary right before the block was overwritten: a write before the start of the block.";
    case RP_ERR_DOUBLE_FREE:
        return "The block was already freed.";
    case RP_ERR_INVALID_FREE:
        return "The pointer is not the start of a live block of a rampart heap.";
    case RP_ERR_USE_AFTER_FREE_WRITE:
        return history_known ? "The free pattern of a freed block was overwritten: a write after free."
                             : "Free memory was overwritten: a write after free to a block already out of "
                               "quarantine (its history is gone; raise quarantine_bytes), or a wild write.";
    case RP_ERR_CORRUPT_FREE_LIST:
        return "A free-list link or free block header was overwritten (often a write after free).";
    case RP_ERR_CORRUPT_BLOCK:
        return "A block header was overwritten (often an overflow from the block before it).";
    default:
        return "";
    }
}

static void print_stack(rp_sink_buf *b, uint32_t id) { rp_symbolize_stack_to(b, id); }

static void print_location(rp_sink_buf *b, const void *address, const void *block, size_t size)
{
    uintptr_t a = (uintptr_t)address, lo = (uintptr_t)block, hi = lo + size;
    const char *where;
    uintptr_t dist;
    if (a < lo) {
        where = "before";
        dist = lo - a;
    } else if (a >= hi) {
        where = "after";
        dist = a - hi;
    } else {
        where = "inside";
        dist = a - lo;
    }
    rp_sink_printf(b, "%p is located %lu bytes %s the %zu-byte block [%p, %p)\n", address, (unsigned long)dist,
                   where, size, block, (const void *)hi);
}

/* The report being delivered on this thread. Initial-exec, as the drop-in's thread state: with
 * rampart as malloc no access may go through __tls_get_addr, which can allocate. */
static __thread struct {
    const rp_report *report;
    rp_report_history history;
} delivering __attribute__((tls_model("initial-exec")));

int rp_report_get_history(const rp_report *r, rp_report_history *out)
{
    if (!r || !out || r != delivering.report)
        return -1;
    *out = delivering.history;
    return 0;
}

/* An underflow that ran over the block's header as well as its metadata makes the core
 * refuse the pointer as invalid: no header says a block starts there. When the walk of the
 * span does reach a damaged header right before the pointer and the canary changed, the
 * report says what happened instead: an underflow, at the canary's byte nearest the block. */
/* Returns 1 when it did: the block's size went with its header, so the report has no location
 * line. */
static int underflow_over_header(const rp_heap *h, rp_report *r)
{
    static __thread char message[sizeof ((rp_fault *)0)->message] __attribute__((tls_model("initial-exec")));
    if (r->kind != RP_ERR_INVALID_FREE || !h || !rp_debug_damaged_block_at((rp_heap *)h, r->address))
        return 0;
    rp_debug_meta m;
    rp_meta_load(r->address, &m);
    unsigned back = rp_cookie_check_lead(rp_debug_secret(h), r->address, &m);
    if (!back)
        return 0;
    const char *user = r->address;
    snprintf(message, sizeof message,
             "canary before %p changed at %p (%u byte%s before the block), and the block's header with it", user,
             (const void *)(user - back), back, back == 1 ? "" : "s");
    r->kind = RP_ERR_HEAP_BUFFER_UNDERFLOW;
    r->block = user;
    r->block_size = 0;
    r->address = user - back;
    r->offset = -(long)back;
    r->message = message;
    return 1;
}

/* A write that damaged the header or metadata of a block Q — not only its canary, the 8 bytes
 * an underflow of Q reaches first — came from before Q: when the first damaged byte lies past
 * the requested end of a used block P right before Q, the report names P, the block whose
 * bounds were crossed, with its history, and says where the byte landed. Returns 1 when it
 * did. */
#define FREE_MEMORY_REACH 256u

static int blame_block_before(const rp_heap *h, rp_report *r, rp_report_history *hist)
{
    static __thread char message[sizeof ((rp_fault *)0)->message] __attribute__((tls_model("initial-exec")));
    /* A write into free memory with no block's history (not a quarantined block: the free space
     * between blocks) is blamed on a live block that ends at most FREE_MEMORY_REACH bytes below
     * it, as a linear overflow, the way ASan names the nearest block. */
    int into_free = r->kind == RP_ERR_USE_AFTER_FREE_WRITE && hist->alloc_stack == 0 && hist->requested == 0;
    if (!h || (r->kind != RP_ERR_HEAP_BUFFER_UNDERFLOW && r->kind != RP_ERR_CORRUPT_BLOCK && !into_free) ||
        !r->address)
        return 0;
    const char *a = r->address;
    rp_debug_owner q, p;
    const char *before;
    if (rp_debug_find_owner((rp_heap *)h, a, &q) == 0) {
        /* Q's canary (an underflow of Q), or inside Q's own area or trailer; but free memory
         * found written as Q was carved from it is the block before Q's */
        if (a >= (const char *)q.user - sizeof(uint64_t) && !into_free)
            return 0;
        before = (const char *)q.user - RP_USER_OFFSET - 1;
    } else {
        before = a - 1; /* Q's header is too damaged to walk to: the byte before the damage */
    }
    int found = 0;
    unsigned reach = into_free ? FREE_MEMORY_REACH : RP_USER_OFFSET;
    for (unsigned back = 0; back <= reach && !found; back += 8)
        found = rp_debug_find_owner((rp_heap *)h, before - back, &p) == 0 && p.meta_ok;
    if (!found)
        return 0;
    const char *end = (const char *)p.user + p.meta.requested;
    if (a < end || a >= (const char *)p.user + p.usable + (into_free ? FREE_MEMORY_REACH : RP_USER_OFFSET))
        return 0;
    snprintf(message, sizeof message, "%zu bytes after the end of the %zu-byte block %p, in the %s after it",
             (size_t)(a - end), (size_t)p.meta.requested, p.user,
             into_free ? "free memory" : r->kind == RP_ERR_CORRUPT_BLOCK ? "header of the block" : "debug metadata of the block");
    r->kind = RP_ERR_HEAP_BUFFER_OVERFLOW;
    r->block = p.user;
    r->block_size = (size_t)p.meta.requested;
    r->offset = (long)(a - (const char *)p.user);
    r->message = message;
    hist->alloc_stack = p.meta.alloc_stack;
    hist->free_stack = p.meta.free_stack;
    hist->requested = (size_t)p.meta.requested;
    return 1;
}

int rp_hook_report(const rp_fault *f, rp_report *r, int default_handler)
{
    int size_unknown = underflow_over_header(f->heap, r);
    const char *entry = NULL;
    uint32_t detect = f->access_stack ? f->access_stack : rp_backtrace_report_stack(&entry);
    const rp_heap *h = f->heap;
    rp_report_history hist = {f->alloc_stack, f->free_stack, detect, f->requested};
    int history_known = f->alloc_stack != 0 || f->requested != 0;
    if (blame_block_before(h, r, &hist)) {
        history_known = 1;
        size_unknown = 0;
    }

    /* A fault the core found (an interior free, a damaged neighbour) names no history: find
     * the block concerned and take its metadata. */
    const void *block = r->block;
    size_t block_size = hist.requested ? hist.requested : r->block_size;
    rp_debug_owner owner;
    int about_a_block = r->kind == RP_ERR_INVALID_FREE || r->kind == RP_ERR_CORRUPT_BLOCK;
    if (!history_known && about_a_block && h && rp_debug_find_owner((rp_heap *)h, block ? block : r->address, &owner) == 0 &&
        owner.meta_ok) {
        block = owner.user;
        block_size = (size_t)owner.meta.requested;
        hist.alloc_stack = owner.meta.alloc_stack;
        hist.free_stack = owner.meta.free_stack;
        hist.requested = block_size;
        history_known = 1;
        if (!r->block) {
            r->block = block;
            r->block_size = block_size;
            r->offset = (long)((const char *)r->address - (const char *)block);
        }
    }

    rp_sink_buf b;
    rp_sink_begin(&b, rp_sink_fd());
    const char *kind = rp_error_kind_name(r->kind);
    rp_sink_printf(&b, "=================================================================\n");
    rp_sink_printf(&b, "==%ld==ERROR: rampart: %s on address %p (heap '%s')\n", (long)getpid(), kind, r->address,
                   h ? rp_heap_name(h) : "none");
    rp_sink_printf(&b, "%s\n", r->message);
    if (block) {
        if (!size_unknown)
            print_location(&b, r->address, block, block_size);
        long off = (long)((const char *)r->address - (const char *)block);
        if (f->access)
            rp_sink_printf(&b, "%s of the byte at offset %ld from the start of the block.\n",
                           f->access == 'W' ? "WRITE" : "READ", off);
        else if (r->kind == RP_ERR_HEAP_BUFFER_OVERFLOW || r->kind == RP_ERR_HEAP_BUFFER_UNDERFLOW ||
                 r->kind == RP_ERR_USE_AFTER_FREE_WRITE)
            rp_sink_printf(&b, "The first corrupted byte is at offset %ld from the start of the block.\n", off);
        else
            rp_sink_printf(&b, "The address is at offset %ld from the start of the block.\n", off);
    }
    rp_sink_printf(&b, "%s\n", explain(r->kind, history_known, f->access));
    if (entry)
        rp_sink_printf(&b, "Detected in %s, called from:\n", entry);
    else
        rp_sink_printf(&b, "Detected at:\n");
    print_stack(&b, detect);
    if (history_known) {
        rp_sink_printf(&b, "Block allocated here:\n");
        print_stack(&b, hist.alloc_stack);
        if (hist.free_stack) {
            rp_sink_printf(&b, "Block freed here:\n");
            print_stack(&b, hist.free_stack);
        }
    }
    if (block)
        rp_sink_printf(&b, "SUMMARY: rampart: %s %p at offset %ld of the %zu-byte block %p (heap '%s')\n", kind,
                       r->address, (long)((const char *)r->address - (const char *)block), block_size, block,
                       h ? rp_heap_name(h) : "none");
    else
        rp_sink_printf(&b, "SUMMARY: rampart: %s %p (heap '%s')\n", kind, r->address, h ? rp_heap_name(h) : "none");
    rp_sink_flush(&b);

    delivering.report = r;
    delivering.history = hist;
    /* The default handler prints one line to stderr and aborts; with on_error=continue the
     * runtime stops here and the operation is abandoned, as with a handler that returns. */
    return default_handler && !rp_debug_config_get()->abort_on_error;
}
