/*
 * settings_finish.c -- what memcached 1.6.18 checks once every option is
 * read: -I against -m and slab_chunk_max, -o slab_sizes against -n, the
 * LRU percentages, the ports; and the values derived from several options
 * (the eviction policy -o no_lru_maintainer or -o storage=seg implies, the
 * TCP port -U alone sets, UDP threads per listener).
 */
#include "server/settings_int.h"

#include "core/options.h"

#include <string.h>

#define CHUNK_ALIGN_BYTES 8             /* memcached's slab size alignment */

/*
 * The class sizes of -o slab_sizes=a-b-c: each within [-n, slab_chunk_max],
 * each more than CHUNK_ALIGN_BYTES above the one before, fewer than 63.
 */
static int slab_sizes_parse(struct parse *p) {
    struct settings *s = p->s;
    char *save = NULL;
    unsigned last = 0;
    s->nslab_sizes = 0;
    for (char *tok = strtok_r(p->slab_sizes, "-", &save); tok != NULL;
         tok = strtok_r(NULL, "-", &save)) {
        unsigned size = 0;
        if (!options_strtou32(tok, &size) || size < (unsigned)s->chunk_size ||
            size > (unsigned)s->slab_chunk_size_max) {
            fprintf(p->err, "slab size %u is out of valid range\n", size);
            return SETTINGS_EX_USAGE;
        }
        if (last >= size) {
            fprintf(p->err, "slab size %u cannot be lower than or equal to a previous "
                            "class size\n", size);
            return SETTINGS_EX_USAGE;
        }
        if (size <= last + CHUNK_ALIGN_BYTES) {
            fprintf(p->err, "slab size %u must be at least %d bytes larger than previous "
                            "class\n", size, CHUNK_ALIGN_BYTES);
            return SETTINGS_EX_USAGE;
        }
        s->slab_sizes[s->nslab_sizes++] = size;
        last = size;
        if (s->nslab_sizes >= SETTINGS_MAX_SLAB_SIZES) {
            fprintf(p->err, "too many slab classes specified\n");
            return SETTINGS_EX_USAGE;
        }
    }
    return 0;
}

/*
 * The flash tier's files taken together, as memcached's extstore_init()
 * judges them when it starts (after every check above: exit 1, its words),
 * the open files' own faults aside (the engine finds those: flash.h); then
 * memcached's defaults of ext_compact_under and ext_drop_under, a quarter
 * of the pages each.  (memcached 1.6.18 takes the quarter of the last
 * ext_path's pages only, and sets ext_drop_under so only when
 * ext_compact_under is left at 0; its -h says "1/4th of the assigned
 * storage", which is what cellard takes, each on its own.)
 */
static int ext_finish(struct parse *p) {
    struct settings *s = p->s;
    const char *why = NULL;
    uint64_t pages = 0;
    if (s->storage_seg) {
        fprintf(p->err, "cellard: -o storage=seg takes no flash tier (ext_path): the segment "
                        "store keeps its values in memory; use storage=slab\n");
        return 1;
    }
    for (unsigned i = 0; i < s->ext_nfiles; i++)
        pages += s->ext_size[i] / s->ext_page_size;
    if (s->ext_wbuf_size == 0 || s->ext_page_size % s->ext_wbuf_size != 0)
        why = "page_size must be divisible by wbuf_size";
    else if (s->ext_page_size % (2 * MB) != 0 || s->ext_wbuf_size % (2 * MB) != 0)
        why = "page_size and wbuf_size must be divisible by 1024*1024*2";
    else if (pages > SETTINGS_EXT_MAX_PAGES)
        why = "page_count must total to < 65536. Increase page_size or lower path sizes";
    if (why != NULL) {
        fprintf(p->err, "Failed to initialize external storage: %s\n", why);
        return 1;
    }
    s->ext_pages = (unsigned)pages;
    if (s->ext_compact_under == 0)
        s->ext_compact_under = s->ext_pages / 4;
    if (s->ext_drop_under == 0)
        s->ext_drop_under = s->ext_pages / 4;
    return 0;
}

/*
 * What memcached checks once every option is read, in its order (when
 * several are wrong, the same one is reported), all with exit code 64.
 */
int settings_finish(struct parse *p) {
    struct settings *s = p->s;
    FILE *err = p->err;

    if (s->num_napi_ids > s->num_threads) {
        fprintf(err, "Number of napi_ids(%d) cannot be greater than number of threads(%d)\n",
                s->num_napi_ids, s->num_threads);
        return SETTINGS_EX_USAGE;
    }
    if (s->item_size_max < 1024) {
        fprintf(err, "Item max size cannot be less than 1024 bytes.\n");
        return SETTINGS_EX_USAGE;
    }
    if ((size_t)s->item_size_max > s->maxbytes / 2) {
        fprintf(err, "Cannot set item size limit higher than 1/2 of memory max.\n");
        return SETTINGS_EX_USAGE;
    }
    if (s->item_size_max > 1024 * MB) {
        fprintf(err, "Cannot set item size limit higher than a gigabyte.\n");
        return SETTINGS_EX_USAGE;
    }
    /* Items over 1 MiB are chained from half-page chunks unless told otherwise. */
    if (s->item_size_max > MB && !p->chunk_changed)
        s->slab_chunk_size_max = s->slab_page_size / 2;
    if (s->slab_chunk_size_max > s->item_size_max) {
        fprintf(err, "slab_chunk_max (bytes: %d) cannot be larger than -I (item_size_max %d)\n",
                s->slab_chunk_size_max, s->item_size_max);
        return SETTINGS_EX_USAGE;
    }
    if (s->item_size_max % s->slab_chunk_size_max != 0) {
        fprintf(err, "-I (item_size_max: %d) must be evenly divisible by slab_chunk_max "
                     "(bytes: %d)\n", s->item_size_max, s->slab_chunk_size_max);
        return SETTINGS_EX_USAGE;
    }
    if (s->slab_page_size % s->slab_chunk_size_max != 0) {
        fprintf(err, "slab_chunk_max (bytes: %d) must divide evenly into %d (slab_page_size)\n",
                s->slab_chunk_size_max, s->slab_page_size);
        return SETTINGS_EX_USAGE;
    }
    /* memcached's storage_check_config(), with a flash tier only */
    if (s->ext_nfiles > 0 && (unsigned)s->item_size_max > s->ext_wbuf_size) {
        fprintf(err, "-I (item_size_max: %d) cannot be larger than ext_wbuf_size: %d\n",
                s->item_size_max, (int)s->ext_wbuf_size);
        return SETTINGS_EX_USAGE;
    }
    if (s->ext_nfiles > 0 && s->udpport != 0) {
        fprintf(err, "Cannot use UDP with extstore enabled (-U 0 to disable)\n");
        return SETTINGS_EX_USAGE;
    }
    if (p->slab_sizes != NULL) {
        int rc = slab_sizes_parse(p);
        if (rc != 0)
            return rc;
    }
    if (s->hot_lru_pct + s->warm_lru_pct > 80) {
        fprintf(err, "hot_lru_pct + warm_lru_pct cannot be more than 80%% combined\n");
        return SETTINGS_EX_USAGE;
    }
    if (s->temp_lru && !s->lru_maintainer_thread) {
        fprintf(err, "temporary_ttl requires lru_maintainer to be enabled\n");
        return SETTINGS_EX_USAGE;
    }
    /* Without segmented LRU (no_lru_maintainer, no_modern) memcached's LRU is
       flat; an explicit evict_policy wins. */
    if (s->evict_policy == settings_default_policy && !s->lru_segmented)
        s->evict_policy = settings_flat_policy;
    /* Segments are evicted whole, oldest first, unless a policy is named. */
    if (s->storage_seg && (s->evict_policy == settings_default_policy ||
                           s->evict_policy == settings_flat_policy))
        s->evict_policy = settings_seg_policy;
    /* SASL authentication speaks binary alone (-S alone makes it so), and not over UDP,
       which has no connection to be authenticated (memcached's words and order: before
       -Y's checks, so -S -Y without -B ends up ASCII, as memcached does) */
    if (s->sasl) {
        if (!p->protocol_specified) {
            s->binding_protocol = SETTINGS_PROTO_BINARY;
        } else if (s->binding_protocol != SETTINGS_PROTO_BINARY) {
            fprintf(err, "ERROR: You cannot allow the ASCII protocol while using SASL.\n");
            return SETTINGS_EX_USAGE;
        }
        if (s->udpport != 0) {
            fprintf(err, "ERROR: Cannot enable UDP while using binary SASL authentication.\n");
            return SETTINGS_EX_USAGE;
        }
    }
    /* With only -U given (and not -U 0), TCP listens on the same port, as in memcached. */
    if (p->udp_specified && s->udpport != 0 && !p->tcp_specified)
        s->port = s->udpport;
    /* memcached checks only the TCP port (and only above 65535). */
    if (s->port < -1 || s->port > 65535) {
        fprintf(err, "ERROR: Invalid port number %d.\n", s->port);
        return SETTINGS_EX_USAGE;
    }
    if (s->udpport < -1 || s->udpport > 65535) {
        fprintf(err, "ERROR: Invalid port number %d.\n", s->udpport);
        return SETTINGS_EX_USAGE;
    }
    /* ASCII authentication speaks ASCII alone, and not over UDP, which has no connection
       to be authenticated (memcached's words and order) */
    if (s->auth_file != NULL) {
        if (!p->protocol_specified) {
            s->binding_protocol = SETTINGS_PROTO_ASCII;
        } else if (s->binding_protocol != SETTINGS_PROTO_ASCII) {
            fprintf(err, "ERROR: You cannot allow the BINARY protocol while using ascii "
                         "authentication tokens.\n");
            return SETTINGS_EX_USAGE;
        }
        if (s->udpport != 0) {
            fprintf(err, "Cannot use UDP with ascii authentication enabled (-U 0 to "
                         "disable)\n");
            return SETTINGS_EX_USAGE;
        }
    }
    /* memcached finds this when it listens (EX_OSERR); found here, nothing is made yet */
    if (!s->ssl_enabled && s->inter != NULL && strstr(s->inter, "notls:") != NULL) {
        fprintf(err, "'notls' option is valid only when SSL is enabled\n"
                     "failed to listen on one of interface(s) %s\n", s->inter);
        return 71;
    }
    if (s->ssl_enabled && s->port == 0) {
        fprintf(err, "ERROR: You cannot enable SSL without a TCP port.\n");
        return SETTINGS_EX_USAGE;
    }
    /* One UDP thread per listener when several are listed. */
    s->num_threads_per_udp = s->inter && strchr(s->inter, ',') ? 1 : s->num_threads;
    return s->ext_nfiles > 0 ? ext_finish(p) : 0;
}
