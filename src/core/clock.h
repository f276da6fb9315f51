/*
 * clock.h -- the two clocks programs read: a monotonic one in
 * milliseconds, for timeouts and pacing, and the wall clock in
 * microseconds, for timestamps that leave the process.  Inline, no
 * state, safe from any thread.  (Code whose time is passed in, as
 * STYLE.md asks of storage and the simulator, takes it from its caller.)
 */
#ifndef CELLAR_CORE_CLOCK_H
#define CELLAR_CORE_CLOCK_H

#include <stdint.h>
#include <sys/time.h>
#include <time.h>

/* Monotonic milliseconds (since an arbitrary start). */
static inline uint64_t clock_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Monotonic nanoseconds (since an arbitrary start). */
static inline uint64_t clock_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Microseconds since the unix epoch. */
static inline int64_t clock_unix_us(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

#endif
