/*
 * lease_fill.c -- a look-aside cache in front of a slow function, with
 * leases, as the paper's web servers use memcache.
 *
 *   read key --hit--> done
 *      |
 *     miss: this process holds the lease --> compute, store with the token
 *      |
 *     another process holds it --> libcellar waits and reads again
 *
 *   cc -o lease_fill examples/lease_fill.c $(pkg-config --cflags --libs cellar)
 *   ./lease_fill 127.0.0.1:11211 user:42
 *
 * The slow function stands for a database query.  Run several at once on
 * a missing key: one computes, the others print the value it stored.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cellar.h>

/* The expensive thing being cached. */
static void slow_lookup(const char *key, char *out, size_t cap) {
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    snprintf(out, cap, "profile of %s, computed at %ld", key, (long)time(NULL));
}

/* Prints key's value, computing and storing it when this process wins the lease. */
static int cached(struct cellar *h, const char *key) {
    struct cellar_item it;
    struct cellar_lease lease;
    int rc = cellar_lease_get(h, key, strlen(key), 10, &it, &lease);
    if (rc != CELLAR_OK) {
        fprintf(stderr, "lease-get %s: %s\n", key, cellar_strerror(rc));
        return 1;
    }
    if (lease.state == CELLAR_LEASE_HIT || lease.state == CELLAR_LEASE_STALE) {
        printf("%s%s: %.*s\n", lease.state == CELLAR_LEASE_STALE ? "(stale) " : "", key,
               (int)it.nvalue, it.value);
    } else if (lease.state == CELLAR_LEASE_WIN) {
        char value[256];
        slow_lookup(key, value, sizeof(value));
        rc = cellar_lease_set(h, key, strlen(key), value, strlen(value), 0, 300, lease.token);
        printf("computed %s: %s (%s)\n", key, value,
               rc == CELLAR_OK ? "stored" : "not stored: deleted meanwhile");
    } else {
        printf("%s: still being computed elsewhere\n", key);
    }
    cellar_item_clear(&it);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: lease_fill SERVERS KEY...\n");
        return 2;
    }
    char err[256];
    struct cellar_config *cfg;
    if (cellar_config_parse(&cfg, argv[1], NULL, err, sizeof(err)) != CELLAR_OK) {
        fprintf(stderr, "lease_fill: %s\n", err);
        return 2;
    }
    struct cellar *h;
    int rc = cellar_create(&h, cfg);
    cellar_config_release(&cfg);
    if (rc != CELLAR_OK)
        return 1;
    int bad = 0;
    for (int i = 2; i < argc; i++)
        bad |= cached(h, argv[i]);
    cellar_destroy(&h);
    return bad;
}
