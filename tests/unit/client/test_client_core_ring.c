/*
 * test_client_core_ring.c -- test_client_core.c's tests with each handle's
 * connections driven by an io_uring of its own (cl_async_ring()): every
 * fault, timeout and destruction with requests (and now the kernel's
 * receives and sends) in flight.
 */
#define CORE_ON_RING 1
#include "test_client_core.c"
