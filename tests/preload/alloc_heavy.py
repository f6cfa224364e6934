# An allocation-heavy Python workload with deterministic output (run with PYTHONMALLOC=malloc
# so every Python object comes from malloc).
import collections
import hashlib
import json
import random
import threading

rng = random.Random(12345)
d = {}
for i in range(60000):
    d["k%06d" % i] = [i, str(i) * (i % 7), {"v": i * 1.5, "t": [i, -i]}]
s = json.dumps(d, sort_keys=True)
assert json.loads(s) == d
words = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(1, 12))) for _ in range(80000)]
counts = collections.Counter(words)
chunks = [bytearray(rng.randint(0, 5000)) for _ in range(3000)]
for c in chunks:
    for j in range(0, len(c), 97):
        c[j] = j & 0xFF
big = b"".join(bytes(c) for c in chunks)
lists = []
for i in range(2000):
    lists.append(list(range(i % 500)))
    if len(lists) > 300:
        del lists[: rng.randint(1, 100)]

results = {}
def worker(n):
    local = []
    r = random.Random(n)
    for i in range(20000):
        local.append(("x" * r.randint(0, 300), i))
        if len(local) > 500:
            local = local[250:]
    results[n] = sum(len(a) for a, _ in local)

threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()

print("json", len(s), hashlib.sha256(s.encode()).hexdigest())
print("words", len(counts), counts.most_common(3))
print("bytes", len(big), hashlib.sha256(big).hexdigest())
print("lists", len(lists), sum(len(l) for l in lists))
print("threads", sorted(results.items()))
