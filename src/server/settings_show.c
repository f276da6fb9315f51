/*
 * settings_show.c -- the settings as memcached 1.6.18 shows them: one
 * field printed (for -h defaults and `stats settings`), and the rows of
 * `stats settings` in memcached's order.
 */
#include <stdio.h>

#include "server/settings_int.h"

#include "net/tls.h"

static const char *proto_name(enum settings_protocol p) {
    switch (p) {
    case SETTINGS_PROTO_ASCII: return "ascii";
    case SETTINGS_PROTO_BINARY: return "binary";
    default: return "auto-negotiate";
    }
}

static const char *hash_name(enum settings_hash h) {
    switch (h) {
    case SETTINGS_HASH_JENKINS: return "jenkins";
    case SETTINGS_HASH_XXH3: return "xxh3";
    default: return "murmur3";
    }
}

const char *settings_field_format(const struct settings *s, enum fmt fmt, size_t off,
                                  char *buf, size_t n) {
    const char *p = (const char *)s + off;
    int i;
    switch (fmt) {
    case F_INT: snprintf(buf, n, "%d", *(const int *)p); break;
    case F_UINT: snprintf(buf, n, "%u", *(const unsigned *)p); break;
    case F_ULONG: snprintf(buf, n, "%lu", *(const unsigned long *)p); break;
    case F_SIZE: snprintf(buf, n, "%zu", *(const size_t *)p); break;
    case F_SIZE_MB: snprintf(buf, n, "%zu", *(const size_t *)p / MB); break;
    case F_UINT_KB: snprintf(buf, n, "%u", *(const unsigned *)p / KB); break;
    case F_UINT_MB: snprintf(buf, n, "%u", *(const unsigned *)p / MB); break;
    case F_ISIZE:
        i = *(const int *)p;
        if (i > 0 && i % MB == 0)
            snprintf(buf, n, "%dm", i / MB);
        else if (i > 0 && i % KB == 0)
            snprintf(buf, n, "%dk", i / KB);
        else
            snprintf(buf, n, "%d", i);
        break;
    case F_OCT: snprintf(buf, n, "%o", (unsigned)*(const int *)p); break;
    case F_F2: snprintf(buf, n, "%.2f", *(const double *)p); break;
    case F_F3: snprintf(buf, n, "%.3f", *(const double *)p); break;
    case F_YESNO: return *(const bool *)p ? "yes" : "no";
    case F_ONOFF: return *(const bool *)p ? "on" : "off";
    case F_ENABLED: return *(const bool *)p ? "enabled" : "disabled";
    case F_STR: return *(const char *const *)p ? *(const char *const *)p : "NULL";
    case F_STR_PNULL: return *(const char *const *)p ? *(const char *const *)p : "(null)";
    case F_CHAR: snprintf(buf, n, "%c", *(const char *)p); break;
    case F_PROTO: return proto_name(*(const enum settings_protocol *)p);
    case F_HASH: return hash_name(*(const enum settings_hash *)p);
    case F_NAPI:
        if (*(const int *)p == 0)
            return "(null)";
        snprintf(buf, n, "%d", *(const int *)p);
        break;
    case F_TLSVER: return net_tls_version_name(*(const int *)p);
    case F_STR_NO: return *(const char *const *)p ? *(const char *const *)p : "no";
    case F_NONE: buf[0] = '\0'; break;
    }
    return buf;
}

/* `stats settings`, in memcached 1.6.18's order. */
struct stat_row {
    const char *name;
    enum fmt fmt;
    size_t off;
};

/*
 * Debian's 1.6.18 is built with extstore and TLS and lists their settings
 * even when they are off; so does cellard.  ext_compact_under and
 * ext_drop_under left at 0 show 0 without a flash tier, and a quarter of
 * its pages with one (settings_finish.c).
 */
static const struct stat_row stat_table[] = {
    {"maxbytes", F_SIZE, FIELD(maxbytes)},
    {"maxconns", F_INT, FIELD(maxconns)},
    {"tcpport", F_INT, FIELD(port)},
    {"udpport", F_INT, FIELD(udpport)},
    {"inter", F_STR, FIELD(inter)},
    {"verbosity", F_INT, FIELD(verbose)},
    {"oldest", F_ULONG, FIELD(oldest_live)},
    {"evictions", F_ONOFF, FIELD(evict_to_free)},
    {"domain_socket", F_STR, FIELD(socketpath)},
    {"umask", F_OCT, FIELD(access)},
    {"shutdown_command", F_YESNO, FIELD(shutdown_command)},
    {"growth_factor", F_F2, FIELD(factor)},
    {"chunk_size", F_INT, FIELD(chunk_size)},
    {"num_threads", F_INT, FIELD(num_threads)},
    {"num_threads_per_udp", F_INT, FIELD(num_threads_per_udp)},
    {"stat_key_prefix", F_CHAR, FIELD(prefix_delimiter)},
    {"detail_enabled", F_YESNO, FIELD(detail_enabled)},
    {"reqs_per_event", F_INT, FIELD(reqs_per_event)},
    {"cas_enabled", F_YESNO, FIELD(use_cas)},
    {"tcp_backlog", F_INT, FIELD(backlog)},
    {"binding_protocol", F_PROTO, FIELD(binding_protocol)},
    {"auth_enabled_sasl", F_YESNO, FIELD(sasl)},
    {"auth_enabled_ascii", F_STR_NO, FIELD(auth_file)},
    {"item_size_max", F_INT, FIELD(item_size_max)},
    {"maxconns_fast", F_YESNO, FIELD(maxconns_fast)},
    {"hashpower_init", F_INT, FIELD(hashpower_init)},
    {"slab_reassign", F_YESNO, FIELD(slab_reassign)},
    {"slab_automove", F_INT, FIELD(slab_automove)},
    {"slab_automove_ratio", F_F2, FIELD(slab_automove_ratio)},
    {"slab_automove_window", F_UINT, FIELD(slab_automove_window)},
    {"slab_chunk_max", F_INT, FIELD(slab_chunk_size_max)},
    {"lru_crawler", F_YESNO, FIELD(lru_crawler)},
    {"lru_crawler_sleep", F_INT, FIELD(lru_crawler_sleep)},
    {"lru_crawler_tocrawl", F_UINT, FIELD(lru_crawler_tocrawl)},
    {"tail_repair_time", F_INT, FIELD(tail_repair_time)},
    {"flush_enabled", F_YESNO, FIELD(flush_enabled)},
    {"dump_enabled", F_YESNO, FIELD(dump_enabled)},
    {"hash_algorithm", F_HASH, FIELD(hash_algorithm)},
    {"lru_maintainer_thread", F_YESNO, FIELD(lru_maintainer_thread)},
    {"lru_segmented", F_YESNO, FIELD(lru_segmented)},
    {"hot_lru_pct", F_INT, FIELD(hot_lru_pct)},
    {"warm_lru_pct", F_INT, FIELD(warm_lru_pct)},
    {"hot_max_factor", F_F2, FIELD(hot_max_factor)},
    {"warm_max_factor", F_F2, FIELD(warm_max_factor)},
    {"temp_lru", F_YESNO, FIELD(temp_lru)},
    {"temporary_ttl", F_INT, FIELD(temporary_ttl)},
    {"idle_timeout", F_INT, FIELD(idle_timeout)},
    {"watcher_logbuf_size", F_UINT, FIELD(watcher_logbuf_size)},
    {"worker_logbuf_size", F_UINT, FIELD(worker_logbuf_size)},
    {"read_buf_mem_limit", F_UINT, FIELD(read_buf_mem_limit)},
    {"track_sizes", F_YESNO, FIELD(track_sizes)},
    {"inline_ascii_response", F_YESNO, FIELD(inline_ascii_response)},
    {"ext_item_size", F_UINT, FIELD(ext_item_size)},
    {"ext_item_age", F_UINT, FIELD(ext_item_age)},
    {"ext_low_ttl", F_UINT, FIELD(ext_low_ttl)},
    {"ext_recache_rate", F_UINT, FIELD(ext_recache_rate)},
    {"ext_wbuf_size", F_UINT, FIELD(ext_wbuf_size)},
    {"ext_compact_under", F_UINT, FIELD(ext_compact_under)},
    {"ext_drop_under", F_UINT, FIELD(ext_drop_under)},
    {"ext_max_sleep", F_UINT, FIELD(ext_max_sleep)},
    {"ext_max_frag", F_F2, FIELD(ext_max_frag)},
    {"slab_automove_freeratio", F_F3, FIELD(slab_automove_freeratio)},
    {"ext_drop_unread", F_YESNO, FIELD(ext_drop_unread)},
    {"ssl_enabled", F_YESNO, FIELD(ssl_enabled)},
    {"ssl_chain_cert", F_STR_PNULL, FIELD(ssl_chain_cert)},
    {"ssl_key", F_STR_PNULL, FIELD(ssl_key)},
    {"ssl_verify_mode", F_INT, FIELD(ssl_verify_mode)},
    {"ssl_keyformat", F_INT, FIELD(ssl_keyformat)},
    {"ssl_ciphers", F_STR, FIELD(ssl_ciphers)},
    {"ssl_ca_cert", F_STR, FIELD(ssl_ca_cert)},
    {"ssl_wbuf_size", F_UINT, FIELD(ssl_wbuf_size)},
    {"ssl_session_cache", F_YESNO, FIELD(ssl_session_cache)},
    {"ssl_kernel_tls", F_YESNO, FIELD(ssl_kernel_tls)},
    {"ssl_min_version", F_TLSVER, FIELD(ssl_min_version)},
    {"num_napi_ids", F_NAPI, FIELD(num_napi_ids)},
    {"memory_file", F_STR_PNULL, FIELD(memory_file)},
    {"evict_policy", F_STR, FIELD(evict_policy)},          /* cellar's three extras */
    {"delete_hold", F_YESNO, FIELD(delete_hold)},
    {"io", F_STR, FIELD(io)},
};

void settings_each_stat(const struct settings *s,
                        void (*emit)(void *ctx, const char *name, const char *value),
                        void *ctx) {
    char buf[64];
    for (size_t i = 0; i < sizeof(stat_table) / sizeof(stat_table[0]); i++) {
        const struct stat_row *r = &stat_table[i];
        emit(ctx, r->name, settings_field_format(s, r->fmt, r->off, buf, sizeof(buf)));
    }
}
