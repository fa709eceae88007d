#include "base.h"
int base_answer(void) { return 42; }
