#include "hello/hello.h"

#include <stdio.h>

int hello_greet(const char *name, char *out, unsigned long size) {
  if (name == 0 || name[0] == '\0') return -1;
  snprintf(out, size, "hello, %s", name);
  return 0;
}
