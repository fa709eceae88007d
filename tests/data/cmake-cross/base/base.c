#include "base.h"
#ifdef BASE_WITH_DOT
int base_dot(void);
int base_answer(void) { return base_dot() - 6; } /* 48 from the dot-product kernel */
#else
int base_answer(void) { return 42; }
#endif
