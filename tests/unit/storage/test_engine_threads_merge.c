/*
 * test_engine_threads_merge.c -- test_engine_threads.c under storage=seg
 * with eviction by merging: items move between segments under the
 * workers' feet.
 */
#define ENGINE_SEG 1
#define ENGINE_SEG_MERGE 1
#include "test_engine_threads.c"
