/*
 * test_engine_seg.c -- test_engine.c again under storage=seg: every engine
 * created through engine_config_defaults() gets the segment back end
 * (policy fifo).  The tests about the slab layout itself are left out
 * there (ENGINE_SEG).
 */
#define ENGINE_SEG 1
#include "test_engine.c"
