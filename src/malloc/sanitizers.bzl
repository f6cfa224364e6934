"""The malloc drop-in under the sanitizer configurations (--config=asan / --config=tsan).

The sanitizer runtimes allocate while they start, before instrumented code may run, so a
program that interposes an instrumented malloc crashes at start-up. Under them the drop-in is
compiled with hidden visibility: a test linking //src/malloc:rampart_malloc statically still
calls rampart's malloc for its own allocations, while the runtime and libc keep the runtime's
allocator. Two allocators then share the process by construction, so free() ignores pointers
rampart never handed out (RP_MALLOC_COEXISTS=1) instead of reporting them; code that tests
that behaviour compiles with COEXISTS_COPTS to know which to expect.
"""

COEXISTS_COPTS = select({
    "//src:asan": ["-DRP_MALLOC_COEXISTS=1"],
    "//src:tsan": ["-DRP_MALLOC_COEXISTS=1"],
    "//conditions:default": [],
})

MALLOC_SANITIZER_COPTS = select({
    "//src:asan": ["-fvisibility=hidden"],
    "//src:tsan": ["-fvisibility=hidden"],
    "//conditions:default": [],
}) + COEXISTS_COPTS
