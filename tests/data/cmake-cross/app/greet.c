#include "greet.h"
#include <base.h>
const char *greet_target(void) {
#if defined(__aarch64__)
  return "aarch64";
#elif defined(__x86_64__)
  return "x86_64";
#else
  return "other";
#endif
}
int greet_answer(void) { return base_answer(); }
