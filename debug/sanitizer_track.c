#include "sanitizer_track.h"

#include "block_meta.h"
#include "debug_heap.h"
#include "src/pagemap.h"
#include "src/walk.h"

#ifdef RP_ASAN
#include <sanitizer/asan_interface.h>
#endif

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define RP_HAVE_VALGRIND 1
#endif
#endif

#ifdef RP_ASAN
int rp_san_enabled = 1;
#else
int rp_san_enabled = 0;
#endif
static int on_valgrind;

void rp_san_init(void)
{
#ifdef RP_HAVE_VALGRIND
    on_valgrind = RUNNING_ON_VALGRIND != 0;
    if (on_valgrind)
        rp_san_enabled = 1;
#endif
}

int rp_san_on_valgrind(void) { return on_valgrind; }

static inline void asan_poison(const void *p, size_t len)
{
#ifdef RP_ASAN
    if (len)
        __asan_poison_memory_region(p, len);
#else
    (void)p, (void)len;
#endif
}

static inline void asan_unpoison(const void *p, size_t len)
{
#ifdef RP_ASAN
    if (len)
        __asan_unpoison_memory_region(p, len);
#else
    (void)p, (void)len;
#endif
}

/* Valgrind requests are issued only when actually running under Valgrind. */
#ifdef RP_HAVE_VALGRIND
#define VG(stmt)                                                                               \
    do {                                                                                       \
        if (on_valgrind) {                                                                     \
            stmt;                                                                              \
        }                                                                                      \
    } while (0)
#else
#define VG(stmt) ((void)0)
#endif

void rp_san_open_slow(const void *p, size_t len)
{
    asan_unpoison(p, len);
    VG((void)VALGRIND_MAKE_MEM_DEFINED(p, len));
}

void rp_san_close_meta_slow(const void *p, size_t len)
{
    asan_poison(p, len);
    VG((void)VALGRIND_MAKE_MEM_NOACCESS(p, len));
}

void rp_san_close_free_slow(const void *p, size_t len)
{
    asan_poison(p, len);
}

/* First byte of a block's memory: its span header, or the first page of a large block's
 * lead. Under ASan everything from there to the user area is allocator space. */
static char *block_start(void *user)
{
    rp_region *r = rp_pagemap_lookup(user);
    rp_page *d = rp_page_of(r, user);
    if (d->state == RP_PAGE_LARGE_BODY)
        return (char *)rp_page_addr(r, d - d->npages);
    if (d->state == RP_PAGE_LARGE)
        return (char *)rp_page_addr(r, d);
    return (char *)user - RP_USER_OFFSET;
}

void rp_san_block_live(rp_heap *h, void *user, size_t requested, size_t usable)
{
    (void)h;
    if (!rp_san_enabled)
        return;
    char *u = user;
    char *lo = block_start(user);
    asan_poison(lo, (size_t)(u - lo));
    asan_unpoison(u, requested);
    asan_poison(u + requested, usable - requested);
    VG((void)VALGRIND_MAKE_MEM_NOACCESS(u - RP_HOOK_PREFIX, RP_HOOK_PREFIX));
    VG((void)VALGRIND_MAKE_MEM_NOACCESS(u + requested, usable - requested));
    VG(VALGRIND_MALLOCLIKE_BLOCK(u, requested, 0, 0));
}

void rp_san_block_resized(rp_heap *h, void *user, size_t old_requested, size_t requested, size_t usable)
{
    (void)h, (void)old_requested;
    if (!rp_san_enabled)
        return;
    char *u = user;
    asan_unpoison(u, requested);
    asan_poison(u + requested, usable - requested);
    VG(VALGRIND_RESIZEINPLACE_BLOCK(u, old_requested, requested, 0));
    VG((void)VALGRIND_MAKE_MEM_NOACCESS(u + requested, usable - requested));
}

void rp_san_block_freed(rp_heap *h, void *user, size_t usable)
{
    (void)h;
    if (!rp_san_enabled)
        return;
    asan_poison(user, usable);
    VG(VALGRIND_FREELIKE_BLOCK(user, 0));
}

void rp_san_block_released(rp_heap *h, void *user, size_t usable)
{
    (void)h;
    if (!rp_san_enabled)
        return;
    /* ASan: the memory stays poisoned; the core touches it only from unsanitised code and the
     * runtime opens what it fills. Valgrind: the core writes headers and links into it. */
    VG((void)VALGRIND_MAKE_MEM_DEFINED((char *)user - RP_HOOK_PREFIX, RP_HOOK_PREFIX + usable));
    (void)user, (void)usable;
}

void rp_san_region_leaving(void *lo, size_t len)
{
    if (!rp_san_enabled)
        return;
    /* munmap does not clear ASan's shadow: memory mapped there later would look poisoned. */
    asan_unpoison(lo, len);
    VG((void)VALGRIND_MAKE_MEM_DEFINED(lo, len));
}

#ifdef RP_HAVE_VALGRIND
static int forget_live_block(rp_heap *h, rp_region *r, const rp_block_info *info, void *arg)
{
    (void)h, (void)r, (void)arg;
    if (info->state == RP_BLOCK_USED)
        VALGRIND_FREELIKE_BLOCK(info->addr, 0);
    return 0;
}
#endif

void rp_san_heap_dropped(rp_heap *h)
{
#ifdef RP_HAVE_VALGRIND
    if (on_valgrind)
        rp_walk_locked(h, forget_live_block, NULL, NULL, 0);
#else
    (void)h;
#endif
}

void rp_san_quiet_begin(void) { VG(VALGRIND_DISABLE_ERROR_REPORTING); }

void rp_san_quiet_end(void) { VG(VALGRIND_ENABLE_ERROR_REPORTING); }
