/* The heap lock's set-up (lock.h): an adaptive mutex, which needs _GNU_SOURCE. */
#define _GNU_SOURCE
#include "lock.h"

void rp_lock_init(rp_lock *l)
{
    pthread_mutexattr_t attr;
    if (pthread_mutexattr_init(&attr) == 0 && pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP) == 0) {
        pthread_mutex_init(l, &attr);
        pthread_mutexattr_destroy(&attr);
        return;
    }
    pthread_mutex_init(l, NULL);
}
