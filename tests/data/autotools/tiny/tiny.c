#include "config.h"
#include "tiny.h"

const char *tiny_configuration(void) { return TINY_CONFIGURATION; }
const char *tiny_symbol_prefix(void) { return TINY_SYMBOL_PREFIX; }
int tiny_add(int a, int b) { return a + b; }
