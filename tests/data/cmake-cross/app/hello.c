#include <stdio.h>
#include "greet.h"
int main(void) {
  printf("hello from %s: %d\n", greet_target(), greet_answer());
  return greet_answer() == 42 ? 0 : 1;
}
