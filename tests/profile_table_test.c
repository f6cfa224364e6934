/* The heap profiler's table of live samples (src/malloc/profile_table.h) against a model:
 * random inserts (some replacing a record of the same address), removals of present and
 * absent addresses and lookups, with PT1..PT3 checked after every operation, across growth
 * from empty to 64K records and back; addresses chosen to collide (neighbours in a few home
 * slots) as well as spread; rp_pt_check names a broken invariant. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/malloc/profile_table.h"
#include "testing.h"

#define KEYS 65536

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t next_rand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static size_t model_size[KEYS]; /* 0 = absent; else the size recorded */
static size_t model_count;

static uintptr_t addr_of(size_t k) { return 0x10000 + (uintptr_t)k * 16; }

static void check(const rp_pt_table *t, const char *when)
{
    char why[200];
    if (rp_pt_check(t, why, sizeof why) != 0) {
        fprintf(stderr, "%s: %s\n", when, why);
        exit(1);
    }
    REQUIRE(t->count == model_count);
}

static void run(rp_pt_table *t, size_t keys, long ops, int fill)
{
    for (long i = 0; i < ops; i++) {
        size_t k = (size_t)(next_rand() % keys);
        unsigned op = (unsigned)(next_rand() % 8);
        if (op < (fill ? 5u : 2u)) {
            rp_pt_record r = {addr_of(k), 1 + (size_t)(next_rand() % 1000), 4096, (uint64_t)i, (uint32_t)k + 1, 0};
            REQUIRE(rp_pt_insert(t, &r) == 0);
            if (!model_size[k])
                model_count++;
            model_size[k] = r.size;
        } else if (op < 7) {
            rp_pt_record out;
            int had = model_size[k] != 0;
            CHECK(rp_pt_remove(t, addr_of(k), &out) == had);
            if (had) {
                CHECK(out.addr == addr_of(k) && out.size == model_size[k] && out.stack == (uint32_t)k + 1);
                model_size[k] = 0;
                model_count--;
            }
        } else {
            rp_pt_record out;
            int has = rp_pt_find(t, addr_of(k), &out);
            CHECK(has == (model_size[k] != 0) && (!has || out.size == model_size[k]));
        }
        if ((i & 255) == 0 || keys < 4096)
            check(t, "random operations");
    }
    check(t, "end of a phase");
}

static int count_fn(void *arg, const rp_pt_record *r)
{
    (void)r;
    ++*(size_t *)arg;
    return 0;
}

int main(void)
{
    rp_pt_table t;
    memset(&t, 0, sizeof t);
    check(&t, "empty");
    CHECK(rp_pt_remove(&t, 0x1000, NULL) == 0 && rp_pt_find(&t, 0x1000, NULL) == 0 && rp_pt_bytes(&t) == 0);
    run(&t, 300, 20000, 1);     /* a few keys, every slot path, no growth past the first table */
    run(&t, KEYS, 400000, 1);   /* growth to tens of thousands of records */
    run(&t, KEYS, 600000, 0);   /* mostly removals: back down */
    /* every record visited once */
    size_t visited = 0;
    CHECK(rp_pt_foreach(&t, count_fn, &visited) == 0 && visited == model_count);
    printf("%zu records left, table of %zu slots (%zu bytes)\n", t.count, t.cap, rp_pt_bytes(&t));

    /* A broken table is named: a duplicate (PT2), a count off (PT2), a record moved away from its
     * probe sequence (PT3). */
    rp_pt_record r = {0x999990, 1, 1, 1, 1, 0};
    REQUIRE(rp_pt_insert(&t, &r) == 0);
    model_count++;
    char why[200];
    size_t home = rp_pt_home(&t, r.addr), slot = home;
    while (t.slots[slot].addr != r.addr)
        slot = (slot + 1) & (t.cap - 1);
    size_t away = (slot + t.cap / 2) & (t.cap - 1);
    while (t.slots[away].addr)
        away = (away + 1) & (t.cap - 1);
    t.slots[away] = t.slots[slot]; /* a copy: two records of one address */
    t.count++;
    CHECKF(rp_pt_check(&t, why, sizeof why) != 0 && strstr(why, "PT2"), "%s", why);
    memset(&t.slots[slot], 0, sizeof t.slots[slot]); /* moved: no probe from its home finds it */
    t.count--;
    CHECKF(rp_pt_check(&t, why, sizeof why) != 0 && strstr(why, "PT3"), "%s", why);
    t.slots[slot] = t.slots[away];
    memset(&t.slots[away], 0, sizeof t.slots[away]);
    t.count++; /* a count off by one */
    CHECKF(rp_pt_check(&t, why, sizeof why) != 0 && strstr(why, "PT2"), "%s", why);
    t.count--;
    check(&t, "repaired");
    rp_pt_clear(&t);
    CHECK(t.cap == 0 && t.count == 0 && rp_pt_bytes(&t) == 0);
    TEST_MAIN_END();
}

