#ifndef BASE_H
#define BASE_H
int base_answer(void);
#endif
