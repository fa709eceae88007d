// The example addon: shades an image with the SDK's pixelbuf and catches the SDK's exceptions,
// which only works when the SDK was built with the host's exception model.
#include <cstdio>
#include <stdexcept>

#include "pixelbuf/pixelbuf.hpp"
#include "vecmath/vecmath.hpp"

int main() {
    pixelbuf::Image img(4, 4);
    img.fill({200, 200, 200, 255});
    img.shade(vecmath::parse_vec3("0,0,1"));
    try {
        img.at(10, 10);
        std::puts("denoise: FAILED (no exception for an out-of-range pixel)");
        return 1;
    } catch (const std::out_of_range&) {
    }
    try {
        vecmath::parse_vec3("not a vector");
        std::puts("denoise: FAILED (no parse_error)");
        return 1;
    } catch (const vecmath::parse_error& e) {
        std::printf("denoise: ok (%dx%d image shaded, caught: %s)\n", img.width(), img.height(),
                    e.what());
    }
    return 0;
}
