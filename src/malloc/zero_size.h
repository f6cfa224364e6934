/* Zero-size blocks: what malloc(0) returns.
 *
 * C and glibc promise a unique pointer that free() accepts, and nothing more: no byte of it
 * may be read or written. Here it is a 16-byte slot of an inaccessible range (PROT_NONE), so
 * a program that reads or writes through it faults at the access instead of touching a
 * neighbour, and free(), realloc() and malloc_usable_size() recognise it from the range. A
 * bitmap apart from the range records which slots are handed out:
 *   Z1  a slot's bit is set exactly while it is handed out (malloc(0) sets it, free clears
 *       it); live counts the bits set; the cursor is a slot index below the slot count; no
 *       bit is set in a word at or above used_words.
 * A free of a slot whose bit is clear is a double free (or never handed out). Slots are taken
 * next-fit from the cursor on, so a freed slot is not handed out again before the cursor has
 * gone round the range. When the range cannot be reserved, or every slot is handed out,
 * malloc(0) falls back to an ordinary one-byte block. Both flavours use it. */
#ifndef RP_ZERO_SIZE_H
#define RP_ZERO_SIZE_H

#include <stddef.h>
#include <stdint.h>

#define RP_ZS_SLOT 16u
#define RP_ZS_BYTES ((size_t)64 << 20) /* 4 Mi slots */

/* The range's base, 0 until the first malloc(0) reserved it (read without a lock: set once). */
extern uintptr_t rp_zs_base;

/* 1 if p lies in the zero-size range (handed out or not). */
static inline int rp_zs_contains(const void *p)
{
    uintptr_t base = __atomic_load_n(&rp_zs_base, __ATOMIC_ACQUIRE);
    return base != 0 && (uintptr_t)p - base < RP_ZS_BYTES;
}

/* A fresh zero-size block, or NULL when the range is unavailable or full (the caller then
 * allocates an ordinary block). Never allocates memory of the heaps. */
void *rp_zs_alloc(void);

/* 1 if p (in the range) is a zero-size block handed out and not freed. */
int rp_zs_live(const void *p);

/* Frees the zero-size block p (in the range): 0; or, if it is not one handed out (a second
 * free, an address inside a slot), reports it on behalf of `who` and returns -1. */
int rp_zs_free(void *p, const char *who);

/* Z1, for rp_malloc_check: 0, or 1 with a message. */
int rp_zs_check(char *why, size_t len);

/* The range's lock across fork (malloc_fork.c). */
void rp_zs_fork_prepare(void);
void rp_zs_fork_parent(void);
void rp_zs_fork_child(void);

#endif
