/*
 * extstore.h -- cellard's side of the flash tier (memcached's extstore;
 * the engine's side is storage/engine.h's engine_ext_*, the page store
 * storage/flash.h): the settings handed to the engine, the flash writer
 * thread, the `extstore` command and the lines of `stats extstore`.
 *
 *   -o ext_* (settings) --extstore_config()--> engine_config.ext
 *   flash writer thread: engine_ext_step(); rests when it did nothing,
 *                        longer each idle round, up to ext_max_sleep
 *   `extstore <knob> <value>` --> struct settings (tune_lock) and
 *                                 engine_ext_tune()
 *   `stats extstore`          --> flash_page_infos(), a page a block
 *
 * Threading: extstore_start() and extstore_stop() are main()'s, once
 * each, before the workers start and after they stop; the command and the
 * stats lines run on the asking connection's worker, the command taking
 * the server's tune_lock to change the settings `stats settings` shows.
 * The writer thread allocates its own state and frees it when stopped;
 * `stats extstore` allocates the page table's copy for the call.
 */
#ifndef CELLAR_SERVER_EXTSTORE_H
#define CELLAR_SERVER_EXTSTORE_H

#include "protocol/mc_text.h"

struct conn;
struct engine_ext_config;
struct server;
struct settings;
struct stat_sink;

/* The flash tier as -o ext_* set it, over out's defaults (engine_config_defaults()). */
void extstore_config(const struct settings *cfg, struct engine_ext_config *out);

/*
 * Starts the flash writer when the engine has a flash tier (nothing
 * otherwise).  0, or -1 when the thread cannot be started.
 */
int extstore_start(struct server *s);

/* Wakes the writer, waits for it to finish its slice, and frees it.  Safe without one. */
void extstore_stop(struct server *s);

/* memcached's `extstore <knob> <value> [noreply]`: OK or ERROR, as 1.6.18 answers. */
void extstore_command(struct conn *c, const struct mc_req *req);

/* `stats extstore`: memcached's four lines per page; none without a flash tier. */
void extstore_stats_pages(struct server *s, struct stat_sink *k);

#endif
