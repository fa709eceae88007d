/* The ELF probe's constants, defined once for C and Python.
 *
 * _scan.c includes this file; prebake.inspect.hotloops_py reads it when it is imported (every
 * "#define PROBE_<NAME> <decimal>" line; a missing or extra name is an import error), so the
 * C probe and its Python twin cannot disagree on a tail's length, its hash or the bitmap's
 * size (tests/unit/test_scan.py compares what the built extension reports with them).
 *
 * A candidate name is keyed by its last PROBE_TAIL bytes; a tail's hash is the top
 * PROBE_HASH_BITS bits of (the tail as a little-endian u32) * PROBE_HASH_MUL (Fibonacci
 * hashing, mod 2^32); the pre-filter bitmap has one bit per hash value.
 */
#define PROBE_TAIL 4
#define PROBE_HASH_MUL 2654435761u
#define PROBE_HASH_BITS 16
#define PROBE_BITMAP_BYTES 8192
