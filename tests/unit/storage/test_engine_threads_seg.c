/*
 * test_engine_threads_seg.c -- test_engine_threads.c under storage=seg:
 * workers storing, reading, deleting and incrementing while segments are
 * evicted and the index grows under them.
 */
#define ENGINE_SEG 1
#include "test_engine_threads.c"
