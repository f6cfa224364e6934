"""meson_sources: what the Meson build (meson.build) compiles, read from the Bazel graph.

    meson_sources(name, artefacts)

artefacts maps a Bazel target to the name of the artefact Meson builds from it (a library or
a program). The rule writes <name>.txt:

    unit PACKAGE:NAME [FLAGS...]   one cc target with C sources; FLAGS are its copts, its
    src PATH                       local defines and the defines it inherits (-D...)
    artefact NAME                  one artefact,
    uses PACKAGE:NAME              the units it is made of,
    link OPTION                    and the link options of its whole closure.

meson.build reads the checked-in dist/meson_sources.txt; //dist:meson_sources_test compares it
with the graph, so Bazel's BUILD files stay the one place that lists sources and flags.
"""

MesonUnitsInfo = provider(
    doc = "The cc units (C sources with their flags) of a target's closure, its inherited defines, link options and files.",
    fields = ["units", "defines", "linkopts", "files"],
)

def _label_key(label):
    return "%s:%s" % (label.package, label.name)

def _units_aspect_impl(target, ctx):
    attr = ctx.rule.attr
    deps = list(getattr(attr, "deps", []))
    actual = getattr(attr, "actual", None)
    if actual:
        deps.append(actual)
    below = [d[MesonUnitsInfo] for d in deps if MesonUnitsInfo in d]
    files = []
    for s in getattr(attr, "srcs", []) + getattr(attr, "hdrs", []):
        files += s.files.to_list()
    defines = depset(getattr(attr, "defines", []), transitive = [b.defines for b in below])
    csrcs = sorted([f.path for f in files if f.extension == "c"])
    own = []
    if csrcs:
        flags = list(getattr(attr, "copts", []))
        flags += ["-D" + d for d in getattr(attr, "local_defines", [])]
        flags += ["-D" + d for d in sorted(defines.to_list())]
        # One string per unit (depset elements must be immutable): key|flags|sources.
        own = ["|".join([_label_key(target.label), " ".join(flags), " ".join(csrcs)])]
    return [MesonUnitsInfo(
        units = depset(own, transitive = [b.units for b in below]),
        defines = defines,
        linkopts = depset(getattr(attr, "linkopts", []), transitive = [b.linkopts for b in below]),
        files = depset(files, transitive = [b.files for b in below]),
    )]

_units_aspect = aspect(
    implementation = _units_aspect_impl,
    attr_aspects = ["deps", "actual"],
)

def _meson_sources_impl(ctx):
    units = {}
    artefacts = []
    files = []
    for target, artefact in ctx.attr.artefacts.items():
        info = target[MesonUnitsInfo]
        files.append(info.files)
        names = []
        for unit in info.units.to_list():
            key, flags, srcs = unit.split("|")
            units[key] = ([f for f in flags.split(" ") if f], [s for s in srcs.split(" ") if s])
            names.append(key)
        artefacts.append((artefact, sorted({n: 1 for n in names}.keys()), info.linkopts.to_list()))
    lines = [
        "# Generated from the Bazel graph by //%s:%s (dist/meson_sources.bzl); compared with it by a test." % (ctx.label.package, ctx.label.name),
        "# meson.build reads it. After changing a BUILD file: dist/update_meson_sources.sh",
    ]
    for key in sorted(units.keys()):
        flags, srcs = units[key]
        lines.append(" ".join(["unit", key] + flags))
        lines += ["src " + s for s in srcs]
    for artefact, names, linkopts in sorted(artefacts):
        lines.append("artefact " + artefact)
        lines += ["uses " + n for n in names]
        lines += ["link " + o for o in sorted({o: 1 for o in linkopts}.keys())]
    out = ctx.actions.declare_file(ctx.label.name + ".txt")
    ctx.actions.write(out, "\n".join(lines) + "\n")
    # Runfiles: every source and header of the closure, for tests that build with Meson.
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out], transitive_files = depset(transitive = files)))]

meson_sources = rule(
    implementation = _meson_sources_impl,
    attrs = {
        "artefacts": attr.label_keyed_string_dict(aspects = [_units_aspect], mandatory = True),
    },
)
