# A program that grows then shrinks, dumping its heaps at each step through the rampart
# library it runs on (rp_dump_to_path, found with ctypes): one dump before, one after each of
# 4 growth steps of about 2 MiB, one after each of 4 shrink steps. Run with
# PYTHONMALLOC=malloc so every object comes from malloc. Argument: the dump path pattern.
import ctypes
import sys

dump = ctypes.CDLL(None).rp_dump_to_path
dump.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
pattern = sys.argv[1].encode()


def snapshot():
    if dump(pattern, None, 0) != 0:
        sys.exit("rp_dump_to_path failed")


def grow_step():
    return [bytearray(1000 + k % 100) for k in range(2000)]


keep = []
snapshot()
for _ in range(4):
    keep.append(grow_step())
    snapshot()
for _ in range(4):
    keep.pop()
    snapshot()
print("done")
