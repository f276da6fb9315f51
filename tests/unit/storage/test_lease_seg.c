/*
 * test_lease_seg.c -- test_lease.c again under storage=seg: leases, stale
 * values, meta arithmetic and the delete hold-off on the segment back end.
 */
#define ENGINE_SEG 1
#include "test_lease.c"
