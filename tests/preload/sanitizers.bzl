"""Tests that need LD_PRELOAD (or run programs that do) cannot run under a sanitizer.

The sanitizer runtimes must come first in a process, so neither an instrumented program nor
an instrumented link of the library can run with LD_PRELOAD. Such tests set
target_compatible_with = NOT_UNDER_SANITIZERS: a constraint no platform has
(//tests/preload:never) marks them incompatible under --config=asan and --config=tsan, so
wildcard test runs skip them.
"""

NOT_UNDER_SANITIZERS = select({
    "//src:asan": ["//tests/preload:never"],
    "//src:tsan": ["//tests/preload:never"],
    "//conditions:default": [],
})
