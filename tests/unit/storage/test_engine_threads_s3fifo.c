/*
 * test_engine_threads_s3fifo.c -- test_engine_threads.c under storage=seg
 * with S3-FIFO over segments: items move from the small queue to the main
 * one, and round the main one, under the workers' feet.
 */
#define ENGINE_SEG 1
#define ENGINE_SEG_S3FIFO 1
#include "test_engine_threads.c"
