"""Offline stand-in for rules_cc: the native C/C++ rules under their usual names.

Debian's bazel-rules-cc 0.0.4 does not load in Bazel 4.2.3, so this file only
re-exports what Bazel has built in.
"""

cc_binary = native.cc_binary
cc_import = native.cc_import
cc_library = native.cc_library
cc_test = native.cc_test
cc_toolchain = native.cc_toolchain
cc_toolchain_suite = native.cc_toolchain_suite
