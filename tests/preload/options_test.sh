#!/bin/bash
# RAMPART_OPTIONS under LD_PRELOAD: an unknown key or a bad value gives one warning line
# each and is ignored, a key the flavour does not use one more (and changes nothing); the
# program runs normally; stats=1 prints the report at exit even when the program closed its
# stderr first; help=1 lists the keys, verbose=1 the values in effect; ',' separates like ':'.
set -u
so=$(readlink -f "$1")
flavour=${2:-release}
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

err=$(LD_PRELOAD=$so RAMPART_OPTIONS='bogus=1:cache_bytes=12Q:arenas=999:stats=0' /bin/ls / 2>&1 >/dev/null)
[ $? -eq 0 ] || fail "ls failed with bad options"
n=$(printf '%s\n' "$err" | grep -c '^rampart: RAMPART_OPTIONS: ')
# The debug flavour has no thread cache: cache_bytes has no effect there, which is said too.
want=3
[ "$flavour" = debug ] && want=4
[ "$n" -eq "$want" ] || fail "expected $want warnings, got $n: $err"
if [ "$flavour" = debug ]; then
    printf '%s\n' "$err" | grep -q "cache_bytes has no effect in the debug flavour" || fail "no flavour warning: $err"
fi
printf '%s\n' "$err" | grep -q "unknown key 'bogus'" || fail "no unknown-key warning: $err"
printf '%s\n' "$err" | grep -q "cache_bytes" || fail "no cache_bytes warning: $err"
printf '%s\n' "$err" | grep -q "arenas" || fail "no arenas warning: $err"

# A key the flavour does not use changes nothing: the hardened profile's key in the debug
# flavour once made realloc and malloc_usable_size look for a seal its blocks never carry.
if [ "$flavour" = debug ]; then
    out=$(seq 1 2000 | LD_PRELOAD=$so RAMPART_OPTIONS=hardened=1 sort -r 2>&1 >/dev/null)
    [ $? -eq 0 ] || fail "sort failed with hardened=1 in the debug flavour: $out"
fi

# Hostile bytes in the variable: warnings only, no crash.
err=$(LD_PRELOAD=$so RAMPART_OPTIONS=$'\x01\x02=:::=\xff:stats' /bin/true 2>&1)
[ $? -eq 0 ] || fail "true failed with hostile options"

# ls closes stderr in its own exit handler; the report still arrives (a copy of stderr).
err=$(LD_PRELOAD=$so RAMPART_OPTIONS=stats=1 /bin/ls / 2>&1 >/dev/null)
printf '%s\n' "$err" | grep -q "malloc statistics" || fail "no statistics at exit: $err"
printf '%s\n' "$err" | grep -q "^  malloc-0 " || fail "no arena line: $err"

# help=1: every key with its default and flavours, once, when the options are read (ls
# allocates; a program that never does would not read them).
err=$(LD_PRELOAD=$so RAMPART_OPTIONS=help=1 /bin/ls / 2>&1 >/dev/null)
printf '%s\n' "$err" | grep -q "this is the $flavour flavour; keys:" || fail "no help title: $err"
for key in cache_bytes retain_bytes poison quarantine_bytes dump_signal verbose; do
    [ "$(printf '%s\n' "$err" | grep -c "^rampart:   $key ")" -eq 1 ] || fail "help does not list $key once: $err"
done

# verbose=1, ',' as the separator, blanks: the values in effect, those the flavour uses.
err=$(LD_PRELOAD=$so RAMPART_OPTIONS='verbose=1, retain_bytes = 8M ,arenas=2' /bin/ls / 2>&1 >/dev/null)
printf '%s\n' "$err" | grep -q "^rampart: options in effect ($flavour flavour):" || fail "no verbose title: $err"
printf '%s\n' "$err" | grep -q "^rampart:   retain_bytes=8M$" || fail "verbose: no retain_bytes=8M: $err"
printf '%s\n' "$err" | grep -q "^rampart:   arenas=2$" || fail "verbose: no arenas=2: $err"
printf '%s\n' "$err" | grep -q "RAMPART_OPTIONS: " && fail "warnings for good options: $err"

# Every key the loaded library ignores is warned about once, the others not: the release library
# writes dumps and profiles (dump_at_exit, dump_interval, profile) and has no leak report; the
# debug library has no sampler (it records every stack).
cd "${TEST_TMPDIR:-/tmp}" || exit 1
if [ "$flavour" = release ]; then
    err=$(LD_PRELOAD=$so RAMPART_OPTIONS='leak_report=1:leak_report=1:dump_at_exit=1:dump_interval=3600:profile=1:dump_path=opt.%p.rpd' /bin/true 2>&1)
else
    err=$(LD_PRELOAD=$so RAMPART_OPTIONS='profile=1:profile=1:dump_at_exit=1:dump_interval=3600:dump_path=opt.%p.rpd' /bin/true 2>&1)
fi
if [ "$flavour" = release ]; then
    [ "$(printf '%s\n' "$err" | grep -c 'RAMPART_OPTIONS: ')" -eq 1 ] &&
        printf '%s\n' "$err" | grep -q "leak_report has no effect in the release flavour" || fail "release: $err"
else
    [ "$(printf '%s\n' "$err" | grep -c 'RAMPART_OPTIONS: ')" -eq 1 ] &&
        printf '%s\n' "$err" | grep -q "profile has no effect in the debug flavour" || fail "debug: $err"
fi
printf '%s\n' "$err" | grep -q "heap dump written to opt\." || fail "$flavour: no exit dump: $err"
rm -f opt.*.rpd

if [ "$failures" -ne 0 ]; then
    exit 1
fi
echo "all checks passed"
