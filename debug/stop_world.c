#define _GNU_SOURCE
#include "stop_world.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "src/bits.h"
#include "src/os.h"
#include "src/secret.h"
#include "src/signal_action.h"

#define ANSWER_SECONDS 2 /* how long a thread may take to answer the signal */
#define LIST_ROUNDS 16   /* listings until no thread is new (threads starting meanwhile) */

static uint64_t stop_secret;       /* the payload that makes a signal ours; set before use */
static rp_world *active_world;     /* the world being stopped, NULL otherwise */
static uint32_t resume_gen;        /* futex: bumped by rp_world_resume */
static uint32_t acks;              /* futex: answers since the stop began */
static uint32_t inside;            /* handlers that may still touch active_world's slots */
static struct sigaction previous;  /* the action installed before ours */

static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *timeout)
{
    return syscall(SYS_futex, word, op, val, timeout, NULL, 0);
}

uintptr_t rp_thread_pointer(void)
{
    uintptr_t tp = 0;
#if defined(__x86_64__)
    __asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
    __asm__ volatile("mrs %0, tpidr_el0" : "=r"(tp));
#endif
    return tp;
}

/* Copies the interrupted registers from the signal context. */
static void fill_regs(rp_thread_regs *slot, void *uctx, uintptr_t here)
{
    ucontext_t *uc = uctx;
    slot->sp = here;
    slot->nregs = 0;
    slot->fp_len = 0;
#if defined(__x86_64__)
    for (unsigned i = 0; i < NGREG && i < RP_THREAD_REGS; i++)
        slot->regs[slot->nregs++] = (uintptr_t)uc->uc_mcontext.gregs[i];
    slot->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    if (uc->uc_mcontext.fpregs) {
        memcpy(slot->fp, uc->uc_mcontext.fpregs, RP_THREAD_FP_BYTES);
        slot->fp_len = RP_THREAD_FP_BYTES;
    }
#elif defined(__aarch64__)
    for (unsigned i = 0; i < 31 && i < RP_THREAD_REGS; i++)
        slot->regs[slot->nregs++] = (uintptr_t)uc->uc_mcontext.regs[i];
    slot->sp = (uintptr_t)uc->uc_mcontext.sp;
#else
    (void)uc;
#endif
    slot->tp = rp_thread_pointer();
}

/* A signal that is not ours: what the action installed before ours would have done. */
static void chain(int sig, siginfo_t *info, void *uctx)
{
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction)
            previous.sa_sigaction(sig, info, uctx);
        return;
    }
    if (previous.sa_handler == SIG_IGN)
        return;
    if (previous.sa_handler == SIG_DFL) {
        /* The default action of a real-time signal ends the process. */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    previous.sa_handler(sig);
}

static void stop_handler(int sig, siginfo_t *info, void *uctx)
{
    if (info->si_code != SI_QUEUE || info->si_pid != getpid() ||
        (uint64_t)(uintptr_t)info->si_value.sival_ptr != __atomic_load_n(&stop_secret, __ATOMIC_RELAXED)) {
        chain(sig, info, uctx);
        return;
    }
    int saved = errno;
    __atomic_add_fetch(&inside, 1, __ATOMIC_SEQ_CST);
    rp_world *w = __atomic_load_n(&active_world, __ATOMIC_SEQ_CST);
    if (w) {
        pid_t tid = (pid_t)syscall(SYS_gettid);
        uint32_t gen = __atomic_load_n(&resume_gen, __ATOMIC_ACQUIRE);
        size_t n = __atomic_load_n(&w->n, __ATOMIC_ACQUIRE);
        for (size_t i = 0; i < n; i++) {
            rp_thread_regs *slot = &w->threads[i];
            if (slot->tid != tid || __atomic_load_n(&slot->state, __ATOMIC_ACQUIRE) != RP_THREAD_SIGNALLED)
                continue;
            volatile char here = 0;
            fill_regs(slot, uctx, (uintptr_t)&here);
            __atomic_store_n(&slot->state, RP_THREAD_STOPPED, __ATOMIC_RELEASE);
            __atomic_add_fetch(&acks, 1, __ATOMIC_RELEASE);
            futex(&acks, FUTEX_WAKE_PRIVATE, 1, NULL);
            while (__atomic_load_n(&resume_gen, __ATOMIC_ACQUIRE) == gen)
                futex(&resume_gen, FUTEX_WAIT_PRIVATE, gen, NULL);
            break;
        }
    }
    __atomic_sub_fetch(&inside, 1, __ATOMIC_SEQ_CST);
    errno = saved;
}

static int install(void)
{
    if (!__atomic_load_n(&stop_secret, __ATOMIC_RELAXED))
        __atomic_store_n(&stop_secret, rp_secret_new((uint64_t)(uintptr_t)&stop_secret) | 1, __ATOMIC_RELAXED);
    struct sigaction now;
    if (sigaction(RP_STOP_SIGNAL, NULL, &now) != 0)
        return -1;
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == stop_handler)
        return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = stop_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    rp_sigaction_keep(&previous, &now); /* not `previous = now`: src/signal_action.h */
    return sigaction(RP_STOP_SIGNAL, &sa, NULL);
}

/* Reads /proc/self/task, calling fn for every thread id but self. -1 when it cannot. */
struct dirent64_raw {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

static int for_each_thread(pid_t self, void (*fn)(pid_t tid, void *arg), void *arg)
{
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[4096] __attribute__((aligned(8)));
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            struct dirent64_raw *d = (struct dirent64_raw *)(buf + off);
            off += d->reclen;
            pid_t tid = 0;
            const char *c = d->name;
            for (; *c >= '0' && *c <= '9'; c++)
                tid = tid * 10 + (*c - '0');
            if (!*c && tid > 0 && tid != self)
                fn(tid, arg);
        }
    }
    close(fd);
    return 0;
}

static void count_one(pid_t tid, void *arg)
{
    (void)tid;
    ++*(size_t *)arg;
}

typedef struct lister {
    rp_world *w;
    size_t added;
    size_t overflow; /* threads beyond the slots: never stopped */
} lister;

static void add_one(pid_t tid, void *arg)
{
    lister *l = arg;
    rp_world *w = l->w;
    for (size_t i = 0; i < w->n; i++)
        if (w->threads[i].tid == tid)
            return;
    if (w->n == w->cap) {
        l->overflow++;
        return;
    }
    /* The slot is complete before the handler can look for it (it is signalled after). */
    rp_thread_regs *slot = &w->threads[w->n];
    memset(slot, 0, sizeof *slot);
    slot->tid = tid;
    slot->state = RP_THREAD_SIGNALLED;
    __atomic_store_n(&w->n, w->n + 1, __ATOMIC_RELEASE);
    l->added++;
}

static int send_stop(pid_t tid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = RP_STOP_SIGNAL;
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_ptr = (void *)(uintptr_t)__atomic_load_n(&stop_secret, __ATOMIC_RELAXED);
    return (int)syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, RP_STOP_SIGNAL, &si);
}

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Waits until every signalled thread answered or the deadline passed. */
static void wait_answers(uint32_t expected, uint64_t deadline)
{
    for (;;) {
        uint32_t seen = __atomic_load_n(&acks, __ATOMIC_ACQUIRE);
        if (seen >= expected)
            return;
        uint64_t now = now_ms();
        if (now >= deadline)
            return;
        struct timespec t = {0, 20 * 1000 * 1000};
        futex(&acks, FUTEX_WAIT_PRIVATE, seen, &t);
    }
}

int rp_world_stop(rp_world *w, uintptr_t self_sp)
{
    memset(w, 0, sizeof *w);
    pid_t self = (pid_t)syscall(SYS_gettid);
    /* The slots never move while handlers may write them: room for twice the threads there
     * are now (plus some), threads started beyond that stay running (not_stopped). */
    size_t count = 0;
    int listed = for_each_thread(self, count_one, &count) == 0;
    size_t cap = 2 * count + 64;
    size_t len = rp_align_up(cap * sizeof(rp_thread_regs), RP_OS_PAGE);
    w->threads = rp_os_scratch_map(len);
    if (!w->threads)
        return -1;
    w->cap = cap;
    w->map_len = len;
    rp_thread_regs *me = &w->threads[w->n++];
    me->tid = self;
    me->state = RP_THREAD_SELF;
    me->sp = self_sp;
    me->tp = rp_thread_pointer();
    if (!listed || install() != 0)
        return -1;
    __atomic_store_n(&acks, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&active_world, w, __ATOMIC_SEQ_CST);
    uint64_t deadline = now_ms() + ANSWER_SECONDS * 1000;
    uint32_t signalled = 0;
    size_t overflow = 0;
    for (int round = 0; round < LIST_ROUNDS; round++) {
        size_t first = w->n;
        lister l = {w, 0, 0};
        if (for_each_thread(self, add_one, &l) != 0)
            break;
        overflow = l.overflow;
        for (size_t i = first; i < w->n; i++) {
            rp_thread_regs *t = &w->threads[i];
            if (send_stop(t->tid) != 0)
                __atomic_store_n(&t->state, RP_THREAD_GONE, __ATOMIC_RELEASE);
            else
                signalled++;
        }
        wait_answers(signalled, deadline);
        if (l.added == 0)
            break;
    }
    w->listed = 1;
    w->not_stopped = overflow;
    for (size_t i = 1; i < w->n; i++)
        if (__atomic_load_n(&w->threads[i].state, __ATOMIC_ACQUIRE) == RP_THREAD_SIGNALLED)
            w->not_stopped++;
    return 0;
}

void rp_world_resume(rp_world *w)
{
    __atomic_store_n(&active_world, NULL, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&resume_gen, 1, __ATOMIC_RELEASE);
    futex(&resume_gen, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
    /* A handler that read the world before it was cleared may still write its slot. */
    while (__atomic_load_n(&inside, __ATOMIC_SEQ_CST))
        sched_yield();
    if (w->threads)
        rp_os_scratch_unmap(w->threads, w->map_len);
    memset(w, 0, sizeof *w);
}
