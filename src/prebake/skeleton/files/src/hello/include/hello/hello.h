/* The example library of a new prebake workspace: replace it with your own sources. */
#ifndef HELLO_HELLO_H
#define HELLO_HELLO_H
#ifdef __cplusplus
extern "C" {
#endif

/* 0 when `name` is non-empty, else -1; writes "hello, NAME" into out (size bytes). */
int hello_greet(const char *name, char *out, unsigned long size);

#ifdef __cplusplus
}
#endif
#endif
