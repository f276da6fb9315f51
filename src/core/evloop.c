#include "core/evloop.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/sys.h"

#define EVLOOP_BATCH 256

struct evloop {
    int epfd;
    int wakefd;         /* eventfd, registered with ptr NULL */
    unsigned count;     /* descriptors registered (not wakefd) */
};

struct evloop *evloop_create(void) {
    struct evloop *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return NULL;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (l->epfd < 0 || l->wakefd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wakefd, &ev) < 0) {
        evloop_destroy(&l);
        return NULL;
    }
    return l;
}

void evloop_destroy(struct evloop **lp) {
    struct evloop *l = *lp;
    if (l == NULL)
        return;
    if (l->epfd >= 0)
        close(l->epfd);
    if (l->wakefd >= 0)
        close(l->wakefd);
    free(l);
    *lp = NULL;
}

static uint32_t to_epoll(int events) {
    return ((events & EV_READ) ? EPOLLIN : 0) | ((events & EV_WRITE) ? EPOLLOUT : 0);
}

int evloop_add(struct evloop *l, int fd, int events, void *ptr) {
    struct epoll_event ev = {.events = to_epoll(events), .data.ptr = ptr};
    int rc = epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev);
    if (rc == 0)
        l->count++;
    return rc;
}

int evloop_mod(struct evloop *l, int fd, int events, void *ptr) {
    struct epoll_event ev = {.events = to_epoll(events), .data.ptr = ptr};
    return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev);
}

int evloop_del(struct evloop *l, int fd) {
    int rc = epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
    if (rc == 0)
        l->count--;
    return rc;
}

int evloop_wait(struct evloop *l, struct ev_fired *out, int max, int timeout_ms) {
    struct epoll_event evs[EVLOOP_BATCH];
    if (max > EVLOOP_BATCH)
        max = EVLOOP_BATCH;
    int n = sys_epoll_wait(l->epfd, evs, max, timeout_ms);
    if (n < 0)
        return 0;       /* EINTR: the caller checks its stop flag and waits again */
    for (int i = 0; i < n; i++) {
        out[i].ptr = evs[i].data.ptr;
        out[i].events = ((evs[i].events & EPOLLIN) ? EV_READ : 0) |
                        ((evs[i].events & EPOLLOUT) ? EV_WRITE : 0) |
                        ((evs[i].events & (EPOLLERR | EPOLLHUP)) ? EV_ERROR : 0);
        if (out[i].ptr == NULL) {
            uint64_t v;
            while (read(l->wakefd, &v, sizeof(v)) == (ssize_t)sizeof(v))
                ;
        }
    }
    return n;
}

int evloop_fd(const struct evloop *l) {
    return l->epfd;
}

unsigned evloop_count(const struct evloop *l) {
    return l->count;
}

void evloop_wake(struct evloop *l) {
    uint64_t one = 1;
    ssize_t r = write(l->wakefd, &one, sizeof(one));
    (void)r;    /* a full counter already means "wake up" */
}
