/* Compiled with -march=armv8.2-a+dotprod only (CMakeLists.txt): fails unless the flag took. */
#ifndef __ARM_FEATURE_DOTPROD
#error "-march=armv8.2-a+dotprod did not reach the compiler"
#endif
#include <arm_neon.h>

int base_dot(void) {
  int8x16_t a = vdupq_n_s8(2), b = vdupq_n_s8(3);
  int32x4_t acc = vdotq_s32(vdupq_n_s32(0), a, b);  /* each lane: 4 * 2 * 3 */
  return vgetq_lane_s32(acc, 0) + vgetq_lane_s32(acc, 3);
}
