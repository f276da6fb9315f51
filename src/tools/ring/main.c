/*
 * main.c -- cellar-ring: where a pool's hash puts each key.
 *
 *   cellar-ring HASH SERVER...   < keys, one per line
 *
 * HASH is ketama, modula, rendezvous or ch3 (client/ring.h); each SERVER is
 * host:port[:weight].  Prints, for each key read, the index (from 0) of
 * its server in the list given, one per line: a check that a cellar pool
 * places keys as the other clients of the same servers do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ring.h"

static int usage(void) {
    fprintf(stderr, "usage: cellar-ring ketama|modula|rendezvous|ch3 host:port[:weight]... < keys\n");
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 3)
        return usage();
    unsigned n = (unsigned)(argc - 2);
    struct ring_server *s = calloc(n, sizeof(*s));
    if (s == NULL)
        return 1;
    for (unsigned i = 0; i < n; i++) {
        char *spec = argv[i + 2], *colon = strchr(spec, ':'), *end;
        if (colon == NULL) {
            fprintf(stderr, "cellar-ring: %s: want host:port[:weight]\n", spec);
            return 2;
        }
        *colon = '\0';
        s[i].host = spec;
        unsigned long port = strtoul(colon + 1, &end, 10), weight = 1;
        if (*end == ':')
            weight = strtoul(end + 1, &end, 10);
        if (*end != '\0' || port == 0 || port > 65535 || weight > UINT32_MAX) {
            fprintf(stderr, "cellar-ring: %s: bad port or weight\n", argv[i + 2]);
            return 2;
        }
        s[i].port = (uint16_t)port;
        s[i].weight = (uint32_t)weight;
    }
    const char *err;
    struct ring *r = ring_create(argv[1], s, n, &err);
    if (r == NULL) {
        fprintf(stderr, "cellar-ring: %s\n", err);
        return 2;
    }
    char line[65536];
    while (fgets(line, sizeof(line), stdin) != NULL) {
        size_t len = strcspn(line, "\r\n");
        printf("%u\n", ring_pick(r, line, len));
    }
    ring_destroy(&r);
    free(s);
    return 0;
}
