"""cc_fuzz_test: one fuzz harness, three build products.

    cc_fuzz_test(name, srcs, deps, corpus, fuzzer_args = [], dict = None, **kwargs)

  <name>           cc_test: replays every input of the corpus and of fuzz/regressions/<name>
                   through LLVMFuzzerTestOneInput (fuzz/replay_main.c). Runs under gcc in every
                   `bazel test //...`, so a checked-in crasher fails the build once reintroduced.
  <name>_fuzzer    cc_binary: a libFuzzer binary under --config=fuzz (//fuzz:fuzzing); in any
                   other configuration the same binary is a replay tool (accepts files and dirs).
  <name>_manifest  the sources, defines and link options the harness is built from, collected
                   from the Bazel graph; <name>_manifest_test compares it with the checked-in
                   fuzz/manifests/<name>.txt, which tools/fuzz.sh (coverage, mutants) and
                   .clusterfuzzlite/build.sh read because they build without Bazel.

corpus is a directory of this package (e.g. "corpus/heap_ops"); several targets may share one.
fuzzer_args are libFuzzer flags every campaign uses (e.g. "-max_len=2048"); they go into the
manifest, so tools/fuzz.sh passes them and .clusterfuzzlite/build.sh writes <name>.options.
dict is a libFuzzer dictionary of this package (e.g. "dicts/options.dict"): tools/fuzz.sh
passes it as -dict=, .clusterfuzzlite/build.sh ships it as <name>.dict.
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_test")

FuzzSourcesInfo = provider(
    doc = "C sources (with their own copts), defines and link options of a target and its cc deps; all their files.",
    fields = ["srcs", "defines", "linkopts", "files"],
)

def _sources_aspect_impl(target, ctx):
    srcs = []
    files = []
    for s in getattr(ctx.rule.attr, "srcs", []) + getattr(ctx.rule.attr, "hdrs", []):
        files += s.files.to_list()
    # "path [flags]": the target's own copts and local_defines apply to its own sources only.
    flags = getattr(ctx.rule.attr, "copts", []) + ["-D" + d for d in getattr(ctx.rule.attr, "local_defines", [])]
    srcs = [" ".join([f.path] + flags) for f in files if f.extension == "c"]
    deps = getattr(ctx.rule.attr, "deps", [])
    actual = getattr(ctx.rule.attr, "actual", None)
    if actual:
        deps = deps + [actual]
    trans = [d[FuzzSourcesInfo] for d in deps if FuzzSourcesInfo in d]
    return [FuzzSourcesInfo(
        srcs = depset(srcs, transitive = [t.srcs for t in trans]),
        defines = depset(getattr(ctx.rule.attr, "defines", []), transitive = [t.defines for t in trans]),
        linkopts = depset(getattr(ctx.rule.attr, "linkopts", []), transitive = [t.linkopts for t in trans]),
        files = depset(files, transitive = [t.files for t in trans]),
    )]

_sources_aspect = aspect(
    implementation = _sources_aspect_impl,
    attr_aspects = ["deps", "actual"],
)

def _manifest_impl(ctx):
    srcs = []
    defines = []
    linkopts = []
    files = []
    for d in ctx.attr.deps:
        info = d[FuzzSourcesInfo]
        files.append(info.files)
        srcs += info.srcs.to_list()
        defines += info.defines.to_list()
        linkopts += info.linkopts.to_list()
    lines = ["# Generated from the Bazel graph by //fuzz:%s; check with %s_test." % (ctx.label.name, ctx.label.name)]
    lines += ["name " + ctx.attr.target]
    lines += ["corpus " + ctx.label.package + "/" + ctx.attr.corpus]
    lines += ["harness " + f.path for f in ctx.files.harness if f.extension == "c"]
    lines += ["arg " + a for a in ctx.attr.fuzzer_args]
    lines += ["dict " + f.path for f in ctx.files.dict]
    lines += ["src " + p for p in sorted({p: 1 for p in srcs}.keys())]
    lines += ["define " + d for d in sorted({d: 1 for d in defines}.keys())]
    lines += ["linkopt " + o for o in sorted({o: 1 for o in linkopts}.keys())]
    out = ctx.actions.declare_file(ctx.label.name + ".txt")
    ctx.actions.write(out, "\n".join(lines) + "\n")
    # Runfiles: the manifest and every source and header it names (tests over the sources,
    # such as //fuzz:mutants_apply_test, reach them this way whatever their visibility).
    runfiles = ctx.runfiles(files = [out] + ctx.files.harness + ctx.files.dict, transitive_files = depset(transitive = files))
    return [DefaultInfo(files = depset([out]), runfiles = runfiles)]

_fuzz_manifest = rule(
    implementation = _manifest_impl,
    attrs = {
        "target": attr.string(),
        "corpus": attr.string(),
        "harness": attr.label_list(allow_files = [".c", ".h"]),
        "fuzzer_args": attr.string_list(),
        "dict": attr.label(allow_single_file = [".dict"]),
        "deps": attr.label_list(aspects = [_sources_aspect]),
    },
)

def cc_fuzz_test(name, srcs, deps, corpus, fuzzer_args = [], dict = None, **kwargs):
    """Declares <name> (replay test), <name>_fuzzer (libFuzzer) and the manifest targets."""
    inputs = native.glob([corpus + "/**", "regressions/" + name + "/**"], exclude = ["**/README*"])
    if not inputs:
        fail("cc_fuzz_test %s: corpus %s is empty" % (name, corpus))
    native.filegroup(name = name + "_corpus", srcs = inputs)
    cc_test(
        name = name,
        srcs = srcs,
        deps = deps + ["//fuzz:replay_main"],
        data = [":" + name + "_corpus"],
        args = ["$(rootpaths :%s_corpus)" % name],
        size = kwargs.pop("size", "small"),
        **kwargs
    )
    cc_binary(
        name = name + "_fuzzer",
        srcs = srcs,
        deps = deps + select({
            "//fuzz:fuzzing": [],
            "//conditions:default": ["//fuzz:replay_main"],
        }),
        linkopts = select({
            "//fuzz:fuzzing": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        **kwargs
    )
    _fuzz_manifest(
        name = name + "_manifest",
        target = name,
        corpus = corpus,
        harness = srcs,
        fuzzer_args = fuzzer_args,
        dict = dict,
        deps = deps,
    )
    native.sh_test(
        name = name + "_manifest_test",
        size = "small",
        srcs = ["//fuzz:manifest_test.sh"],
        args = ["$(rootpath :%s_manifest)" % name, "$(rootpath //fuzz:manifests/%s.txt)" % name],
        data = [":" + name + "_manifest", "//fuzz:manifests/%s.txt" % name],
    )
