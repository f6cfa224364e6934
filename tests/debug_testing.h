/* Helpers for tests of the debug flavour: which sanitizer the build has, a way for the
 * "program" to write where ASan forbids it (so rampart's own detection is what is tested),
 * and a barrier that keeps a call site's frame (no tail call), so reports can name it. */
#ifndef RP_TEST_DEBUG_TESTING_H
#define RP_TEST_DEBUG_TESTING_H

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#endif

/* On functions that read or write allocator-owned memory on purpose. */
#ifdef UNDER_ASAN
#define TEST_NO_ASAN __attribute__((no_sanitize_address))
#else
#define TEST_NO_ASAN
#endif

/* After a call whose caller must stay on the stack (a tail call would replace its frame). */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

#endif
