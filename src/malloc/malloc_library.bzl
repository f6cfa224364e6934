"""The malloc drop-in's library, built several times from one description (see
src/malloc/BUILD): release and debug flavours, each as a static library and as the objects of
an LD_PRELOAD library."""

load("@rules_cc//cc:defs.bzl", "cc_library")

def rampart_malloc_library(name, srcs, copts, alwayslink = False, deps = [], linkopts = [], visibility = None):
    cc_library(
        name = name,
        srcs = srcs,
        hdrs = ["rampart_malloc.h"],
        alwayslink = alwayslink,
        copts = copts,
        linkopts = ["-pthread"] + linkopts,
        strip_include_prefix = "/src/malloc",
        visibility = visibility,
        # rampart_dump.h is part of the drop-in's API (heap dumps, the heap profile).
        deps = deps + ["//debug:drop_in_interfaces", "//debug:dump_api", "//src:internal_headers", "//src:rampart_header"],
    )
