#ifndef TINY_H
#define TINY_H
#define TINY_VERSION "1.2.0"
const char *tiny_configuration(void);
const char *tiny_symbol_prefix(void);
int tiny_add(int a, int b);
#endif
