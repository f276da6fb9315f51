/*
 * sys.h -- the hot path's system calls, made directly.
 *
 * In a process with more than one thread, glibc wraps each call that
 * POSIX names a cancellation point (read, writev, epoll_wait, ...) in a
 * switch to asynchronous cancellation and back: two atomic
 * compare-and-swaps per call, about 70 ns per request when each read
 * carries one request (bench/README.md).  cellar never cancels a thread,
 * so the event loop and the connections make these calls through
 * syscall(), which sets errno the same way and is no cancellation point.
 */
#ifndef CELLAR_CORE_SYS_H
#define CELLAR_CORE_SYS_H

#include <signal.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static inline ssize_t sys_read(int fd, void *buf, size_t n) {
    return syscall(SYS_read, fd, buf, n);
}

static inline ssize_t sys_write(int fd, const void *buf, size_t n) {
    return syscall(SYS_write, fd, buf, n);
}

static inline ssize_t sys_writev(int fd, const struct iovec *iov, int n) {
    return syscall(SYS_writev, fd, iov, n);
}

static inline ssize_t sys_readv(int fd, const struct iovec *iov, int n) {
    return syscall(SYS_readv, fd, iov, n);
}

/* epoll_wait(); the kernel's epoll_pwait with no signal mask is the same call on every arch. */
static inline int sys_epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout_ms) {
    return (int)syscall(SYS_epoll_pwait, epfd, ev, max, timeout_ms, NULL, (size_t)_NSIG / 8);
}

#endif
