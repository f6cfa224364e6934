// C++'s operator new and delete under a preloaded drop-in library (expect_ok_test.sh): every
// form the program calls is the library's (dladdr), hands out usable blocks (aligned ones
// aligned) and takes them back, and running out of memory behaves as the C++ runtime
// specifies: the new_handler runs, then std::bad_alloc is thrown, or the nothrow forms return
// nullptr.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

static int failures;
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

using usable_fn = std::size_t (*)(void *);
static usable_fn usable;

// A block of at least `size` bytes, as rampart's malloc_usable_size sees it (which reports a
// pointer it never handed out).
static bool usable_block(void *p, std::size_t size) { return p && usable(p) >= size; }

struct alignas(256) Wide {
    char bytes[300];
};

static int handler_calls;
static void handler_once()
{
    handler_calls++;
    std::set_new_handler(nullptr); // the next failure throws
}

// A size no allocator can give (and that the compiler cannot prove too big).
static volatile std::size_t huge = SIZE_MAX / 2;

static void forms()
{
    int *one = new int(7);
    CHECK(usable_block(one, sizeof(int)));
    delete one; // sized delete (C++14)

    char *array = new char[100];
    CHECK(usable_block(array, 100));
    std::memset(array, 1, 100);
    delete[] array;

    Wide *wide = new Wide;
    CHECK(usable_block(wide, sizeof(Wide)) && reinterpret_cast<std::uintptr_t>(wide) % 256 == 0);
    delete wide;
    Wide *wides = new Wide[3];
    CHECK(usable_block(wides, 3 * sizeof(Wide)) && reinterpret_cast<std::uintptr_t>(wides) % 256 == 0);
    delete[] wides;

    void *raw = ::operator new(40);
    CHECK(usable_block(raw, 40));
    ::operator delete(raw);
    raw = ::operator new[](0);
    CHECK(raw != nullptr);
    ::operator delete[](raw);
    raw = ::operator new(4096, std::align_val_t(65536));
    CHECK(usable_block(raw, 4096) && reinterpret_cast<std::uintptr_t>(raw) % 65536 == 0);
    ::operator delete(raw, std::align_val_t(65536));
    raw = ::operator new[](24, std::align_val_t(64), std::nothrow);
    CHECK(usable_block(raw, 24) && reinterpret_cast<std::uintptr_t>(raw) % 64 == 0);
    ::operator delete[](raw, std::align_val_t(64), std::nothrow);
    raw = ::operator new(24, std::nothrow);
    CHECK(usable_block(raw, 24));
    ::operator delete(raw, std::nothrow);
}

static void out_of_memory()
{
    CHECK(::operator new(huge, std::nothrow) == nullptr);
    CHECK(::operator new[](huge, std::nothrow) == nullptr);
    CHECK(::operator new(huge, std::align_val_t(4096), std::nothrow) == nullptr);
    bool thrown = false;
    try {
        char *p = new char[huge];
        delete[] p;
    } catch (const std::bad_alloc &) {
        thrown = true;
    }
    CHECK(thrown);
    std::set_new_handler(handler_once);
    thrown = false;
    try {
        void *p = ::operator new(huge);
        ::operator delete(p);
    } catch (const std::bad_alloc &) {
        thrown = true;
    }
    CHECK(thrown && handler_calls == 1);
    thrown = false;
    try {
        void *p = ::operator new(huge, std::align_val_t(128));
        ::operator delete(p, std::align_val_t(128));
    } catch (const std::bad_alloc &) {
        thrown = true;
    }
    CHECK(thrown);
}

// Objects made on one thread and deleted on another, and a churn of small objects.
static void threads()
{
    std::vector<std::vector<int> *> made;
    std::thread maker([&made] {
        for (int i = 0; i < 10000; i++)
            made.push_back(new std::vector<int>(static_cast<std::size_t>(i % 50), i));
    });
    maker.join();
    std::thread breaker([&made] {
        for (std::vector<int> *v : made) {
            CHECK(usable_block(v, sizeof *v));
            delete v;
        }
    });
    breaker.join();
}

// Every operator new and delete the library defines, by its symbol.
static const char *const operators[] = {
    "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t",
    "_ZnamSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
    "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t",
    "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t", "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
};

int main()
{
    usable = reinterpret_cast<usable_fn>(dlsym(RTLD_DEFAULT, "malloc_usable_size"));
    for (const char *name : operators) {
        void *fn = dlsym(RTLD_DEFAULT, name);
        Dl_info where;
        if (!fn || !dladdr(fn, &where) || !std::strstr(where.dli_fname, "rampart")) {
            std::fprintf(stderr, "%s is not rampart's (%s)\n", name, fn ? where.dli_fname : "not found");
            return 1;
        }
    }
    forms();
    out_of_memory();
    threads();
    if (failures)
        return 1;
    std::puts("cxx ok");
    return 0;
}
