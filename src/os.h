/* The only module that talks to the OS about memory (mmap / munmap / madvise).
 *
 * Every call goes through one counter so tests can make the N-th call fail
 * (rp_os_fail_at) and check that the heap reports ENOMEM, stays consistent and leaks
 * nothing. The module also counts the bytes it has mapped, process-wide. */
#ifndef RP_OS_H
#define RP_OS_H

#include <stddef.h>
#include <stdint.h>

#define RP_OS_PAGE 4096u

/* Maps len bytes (a multiple of RP_OS_PAGE) of zeroed, private, read-write memory.
 * NULL on failure. */
void *rp_os_map(size_t len);

/* Maps len bytes (a multiple of RP_OS_PAGE) so that the byte at offset `offset` (a multiple
 * of RP_OS_PAGE) is aligned to align (a power of two), by mapping len + align and trimming.
 * Returns the start of the len bytes. The mapping to give back later is returned in
 * *map_base and *map_len (the len bytes themselves, or more where trimming failed). */
void *rp_os_map_aligned(size_t len, size_t align, size_t offset, void **map_base, size_t *map_len);

/* Unmaps [p, p+len). Returns 0, or -1 (the memory then stays mapped and counted). */
int rp_os_unmap(void *p, size_t len);

/* Moves the mapping [p, p+len) to [to, to+new_len) (mremap with MREMAP_FIXED): the pages
 * move with their contents, no byte is copied; growing adds zeroed pages at the end. The
 * destination must be a mapping of exactly new_len bytes the caller made for this (it is
 * replaced). Returns 0, or -1 with both mappings unchanged. */
int rp_os_move(void *p, size_t len, void *to, size_t new_len);
/* Grows the mapping [p, p+len) in place to new_len bytes (mremap without moving), zeroed
 * pages added at the end. Returns 0, or -1 (the address space after it is taken, or the OS
 * refused) with the mapping unchanged. */
int rp_os_extend(void *p, size_t len, size_t new_len);
/* Tells the OS the contents of [p, p+len) are no longer needed (MADV_DONTNEED): the pages
 * read back as zeros and stop counting towards RSS. Returns 0 or -1. */
int rp_os_decommit(void *p, size_t len);

/* Asks for transparent huge pages on [p, p+len) (MADV_HUGEPAGE): a first touch then maps a
 * whole 2 MiB page instead of faulting 4 KiB at a time. Advisory: a kernel without THP, or
 * one that refuses, leaves ordinary pages, so it returns nothing, is not subject to fault
 * injection and is not counted in rp_os_calls (which tests use to aim failures). */
void rp_os_advise_huge_pages(void *p, size_t len);

/* Gives back the pages of [p, p+len) (page aligned) of metadata whose contents are to become
 * zero (MADV_DONTNEED: they read back as zeros and stop counting towards RSS). Like
 * rp_os_advise_huge_pages, not subject to fault injection and not counted in rp_os_calls:
 * the caller zeroes the memory itself when it returns -1. */
int rp_os_zero_metadata(void *p, size_t len);

/* Reserves len bytes of address space aligned to align (both multiples of RP_OS_PAGE, align a
 * power of two): private, read-write and without swap reservation (MAP_NORESERVE), so a page
 * takes memory only once it is written. For ranges far larger than what they will hold (the
 * slab space, slab.h): not counted in rp_os_mapped_bytes (address space is not memory; the
 * owner counts what it uses). One call for fault injection, however many the trimming takes.
 * NULL on failure. */
void *rp_os_reserve(size_t len, size_t align);

/* Reserves len bytes of address space (a multiple of RP_OS_PAGE) that no access may touch
 * (PROT_NONE): any read or write faults. Not counted in rp_os_mapped_bytes. One call for fault
 * injection. NULL on failure. Give it back with rp_os_unreserve. */
void *rp_os_reserve_inaccessible(size_t len);

/* Makes [p, p+len) of a reservation inaccessible (PROT_NONE): a guard. Not subject to fault
 * injection (a guard the OS refuses is simply absent). 0 or -1. */
int rp_os_make_inaccessible(void *p, size_t len);

/* Makes [p, p+len) of a reservation readable and writable again (a guarded block's pages,
 * src/malloc/guard_pool.h). Not subject to fault injection. 0 or -1. */
int rp_os_make_accessible(void *p, size_t len);

/* Gives a whole reservation back. 0, or -1 (it stays reserved). */
int rp_os_unreserve(void *p, size_t len);

/* Scratch memory for diagnostics (the checker's tables): not subject to fault injection and
 * not counted in rp_os_mapped_bytes, so checking a heap never changes what tests measure. */
void *rp_os_scratch_map(size_t len);
void rp_os_scratch_unmap(void *p, size_t len);

/* Fault injection for tests: the n-th OS call from now fails (n = 1: the next one).
 * 0 turns injection off. Calls that were made are counted whether or not they fail. */
void rp_os_fail_at(uint64_t n);

/* Number of OS calls made so far (mmap, munmap and madvise each count one). */
uint64_t rp_os_calls(void);

/* Bytes currently mapped by rampart in this process (heaps, regions, the address map). */
size_t rp_os_mapped_bytes(void);

#endif
