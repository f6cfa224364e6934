"""The malloc drop-in's library, built twice from one description (see src/BUILD)."""

load("@rules_cc//cc:defs.bzl", "cc_library")

def rampart_malloc_library(name, srcs, copts, alwayslink = False, visibility = None):
    cc_library(
        name = name,
        srcs = srcs,
        hdrs = [
            "rampart.h",
            "rampart_malloc.h",
        ],
        alwayslink = alwayslink,
        copts = copts,
        linkopts = ["-pthread"],
        strip_include_prefix = "/src",
        visibility = visibility,
    )
