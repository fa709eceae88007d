#ifndef GREET_H
#define GREET_H
const char *greet_target(void);
int greet_answer(void);
#endif
