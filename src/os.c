#define _GNU_SOURCE
#include "os.h"

#include <sys/mman.h>

#include "bits.h"

static uint64_t os_calls;      /* atomic */
static uint64_t os_fail_at;    /* atomic: value of os_calls at which a call fails; 0 = never */
static size_t os_mapped;       /* atomic */

/* Counts the call; returns 1 if fault injection says this one must fail. */
static int os_call_fails(void)
{
    uint64_t n = __atomic_add_fetch(&os_calls, 1, __ATOMIC_RELAXED);
    uint64_t target = __atomic_load_n(&os_fail_at, __ATOMIC_RELAXED);
    return target != 0 && n == target;
}

void rp_os_fail_at(uint64_t n)
{
    uint64_t now = __atomic_load_n(&os_calls, __ATOMIC_RELAXED);
    __atomic_store_n(&os_fail_at, n ? now + n : 0, __ATOMIC_RELAXED);
}

uint64_t rp_os_calls(void) { return __atomic_load_n(&os_calls, __ATOMIC_RELAXED); }

size_t rp_os_mapped_bytes(void) { return __atomic_load_n(&os_mapped, __ATOMIC_RELAXED); }

void *rp_os_map(size_t len)
{
    if (len == 0 || os_call_fails())
        return NULL;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    __atomic_add_fetch(&os_mapped, len, __ATOMIC_RELAXED);
    return p;
}

int rp_os_unmap(void *p, size_t len)
{
    if (len == 0)
        return 0;
    if (os_call_fails() || munmap(p, len) != 0)
        return -1;
    __atomic_sub_fetch(&os_mapped, len, __ATOMIC_RELAXED);
    return 0;
}

int rp_os_move(void *p, size_t len, void *to, size_t new_len)
{
    if (os_call_fails())
        return -1;
    void *q = mremap(p, len, new_len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
    if (q == MAP_FAILED)
        return -1;
    /* The destination's new_len bytes were counted when it was mapped: they now hold the
     * moved pages, and the source's len bytes are gone. */
    __atomic_sub_fetch(&os_mapped, len, __ATOMIC_RELAXED);
    return 0;
}

int rp_os_extend(void *p, size_t len, size_t new_len)
{
    if (os_call_fails() || mremap(p, len, new_len, 0) == MAP_FAILED)
        return -1;
    __atomic_add_fetch(&os_mapped, new_len - len, __ATOMIC_RELAXED);
    return 0;
}

void *rp_os_scratch_map(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void rp_os_scratch_unmap(void *p, size_t len)
{
    if (p)
        munmap(p, len);
}

void *rp_os_reserve(size_t len, size_t align)
{
    if (len == 0 || os_call_fails())
        return NULL;
    size_t total = len + align;
    if (total < len)
        return NULL;
    char *raw = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    char *start = (char *)rp_ptr_align_up((uintptr_t)raw, align);
    /* Trimming only gives back address space: a piece the OS keeps stays reserved, unused. */
    if (start > raw)
        (void)munmap(raw, (size_t)(start - raw));
    if (raw + total > start + len)
        (void)munmap(start + len, (size_t)(raw + total - (start + len)));
    return start;
}

void *rp_os_reserve_inaccessible(size_t len)
{
    if (len == 0 || os_call_fails())
        return NULL;
    void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int rp_os_make_inaccessible(void *p, size_t len) { return mprotect(p, len, PROT_NONE); }

int rp_os_make_accessible(void *p, size_t len) { return mprotect(p, len, PROT_READ | PROT_WRITE); }

int rp_os_unreserve(void *p, size_t len)
{
    if (len == 0)
        return 0;
    return os_call_fails() || munmap(p, len) != 0 ? -1 : 0;
}

int rp_os_decommit(void *p, size_t len)
{
    if (len == 0)
        return 0;
    if (os_call_fails())
        return -1;
    return madvise(p, len, MADV_DONTNEED);
}

void rp_os_advise_huge_pages(void *p, size_t len)
{
#ifdef MADV_HUGEPAGE
    if (len)
        (void)madvise(p, len, MADV_HUGEPAGE);
#else
    (void)p;
    (void)len;
#endif
}

int rp_os_zero_metadata(void *p, size_t len)
{
    return len && madvise(p, len, MADV_DONTNEED) == 0 ? 0 : -1;
}

void *rp_os_map_aligned(size_t len, size_t align, size_t offset, void **map_base, size_t *map_len)
{
    if (align <= RP_OS_PAGE) {
        void *p = rp_os_map(len);
        *map_base = p;
        *map_len = len;
        return p;
    }
    size_t reserve = len + align;
    if (reserve < len)
        return NULL;
    char *raw = rp_os_map(reserve);
    if (!raw)
        return NULL;
    char *start = (char *)(rp_ptr_align_up((uintptr_t)raw + offset, align) - offset);
    char *keep_start = raw, *keep_end = raw + reserve;
    /* Trimming is an optimisation: whatever the OS refuses to unmap stays part of the
     * mapping handed back, so the final unmap returns exactly what is still mapped. */
    if (start > raw && rp_os_unmap(raw, (size_t)(start - raw)) == 0)
        keep_start = start;
    if (keep_end > start + len && rp_os_unmap(start + len, (size_t)(keep_end - (start + len))) == 0)
        keep_end = start + len;
    *map_base = keep_start;
    *map_len = (size_t)(keep_end - keep_start);
    return start;
}
