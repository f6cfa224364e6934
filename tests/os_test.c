/* Unit test of the OS module (src/os.h): mapping, aligned mapping with trimming, accounting,
 * and fault injection at the N-th call, including failed trims; reservations. */
#include <stdint.h>

#include "src/os.h"
#include "testing.h"

int main(void)
{
    size_t base = rp_os_mapped_bytes();
    uint64_t calls = rp_os_calls();
    char *p = rp_os_map(1 << 16);
    REQUIRE(p);
    p[0] = 1, p[65535] = 2;
    CHECK(rp_os_mapped_bytes() == base + (1 << 16));
    CHECK(rp_os_calls() == calls + 1);
    CHECK(rp_os_decommit(p, 1 << 16) == 0);
    CHECK(p[0] == 0 && p[65535] == 0); /* decommitted pages read back as zeros */
    CHECK(rp_os_unmap(p, 1 << 16) == 0);
    CHECK(rp_os_mapped_bytes() == base);

    /* Aligned mapping: the byte at `offset` is aligned; trims leave exactly len mapped. */
    void *mb;
    size_t ml;
    char *q = rp_os_map_aligned(8 << 20, 4 << 20, 12288, &mb, &ml);
    REQUIRE(q);
    CHECK(((uintptr_t)q + 12288) % (4 << 20) == 0);
    CHECK(mb == q && ml == (8u << 20));
    CHECK(rp_os_mapped_bytes() == base + (8u << 20));
    CHECK(rp_os_unmap(mb, ml) == 0);
    CHECK(rp_os_mapped_bytes() == base);

    /* Fault injection: the 1st, 2nd, 3rd call from now fails. */
    rp_os_fail_at(1);
    CHECK(rp_os_map(4096) == NULL);
    rp_os_fail_at(2);
    void *ok = rp_os_map(4096);
    CHECK(ok != NULL);
    CHECK(rp_os_unmap(ok, 4096) == -1); /* the injected failure */
    rp_os_fail_at(0);
    CHECK(rp_os_unmap(ok, 4096) == 0);
    CHECK(rp_os_mapped_bytes() == base);

    /* A failed trim keeps what could not be unmapped inside the returned mapping. */
    for (int n = 2; n <= 3; n++) {
        uint64_t before = rp_os_calls();
        rp_os_fail_at((uint64_t)n);
        char *a = rp_os_map_aligned(1 << 20, 1 << 20, 0, &mb, &ml);
        rp_os_fail_at(0);
        REQUIRE(a);
        CHECK((uintptr_t)a % (1 << 20) == 0);
        CHECK((char *)mb <= a && (char *)mb + ml >= a + (1 << 20));
        /* The map was call 1; calls 2 and 3 are the trims that were needed (none when the
         * reservation happened to be aligned at one end). If call n was made, it failed. */
        if (rp_os_calls() - before >= (uint64_t)n)
            CHECK(ml > (1u << 20));
        else
            CHECK(ml == (1u << 20));
        CHECK(rp_os_mapped_bytes() == base + ml);
        CHECK(rp_os_unmap(mb, ml) == 0);
        CHECK(rp_os_mapped_bytes() == base);
    }
    rp_os_fail_at(1);
    CHECK(rp_os_decommit(ok, 4096) == -1);
    rp_os_fail_at(0);

    /* Scratch memory is not counted and not subject to injection. */
    rp_os_fail_at(1);
    void *s = rp_os_scratch_map(4096);
    CHECK(s != NULL);
    CHECK(rp_os_mapped_bytes() == base);
    rp_os_scratch_unmap(s, 4096);
    rp_os_fail_at(0);

    /* A reservation: aligned, far larger than memory would allow if it were reserved for
     * real (64 GiB, MAP_NORESERVE), not counted, one call however it was trimmed; its pages
     * take memory only once written. */
    uint64_t before = rp_os_calls();
    size_t big = (size_t)64 << 30;
    char *r = rp_os_reserve(big, (size_t)1 << 16);
    REQUIRE(r);
    CHECK((uintptr_t)r % (1u << 16) == 0);
    CHECK(rp_os_calls() == before + 1);
    CHECK(rp_os_mapped_bytes() == base);
    r[0] = 1, r[big - 1] = 2;
    CHECK(r[0] == 1 && r[big - 1] == 2);
    CHECK(rp_os_unreserve(r, big) == 0);
    rp_os_fail_at(1);
    CHECK(rp_os_reserve(1 << 16, 1 << 16) == NULL);
    rp_os_fail_at(0);
    r = rp_os_reserve(1 << 16, 1 << 16);
    REQUIRE(r);
    rp_os_fail_at(1);
    CHECK(rp_os_unreserve(r, 1 << 16) == -1); /* refused: still there */
    rp_os_fail_at(0);
    r[100] = 3;
    CHECK(rp_os_unreserve(r, 1 << 16) == 0);
    CHECK(rp_os_mapped_bytes() == base);
    TEST_MAIN_END();
}
