// pixelbuf: the example SDK's media library, built against vecmath from the core stage.
#pragma once

#include <cstdint>
#include <vector>

#include "vecmath/vecmath.hpp"

namespace pixelbuf {

struct Rgba {
    std::uint8_t r = 0, g = 0, b = 0, a = 255;
};

class Image {
public:
    Image(int width, int height);  // throws std::invalid_argument for non-positive sizes
    int width() const { return width_; }
    int height() const { return height_; }
    Rgba& at(int x, int y);  // throws std::out_of_range outside the image
    const Rgba& at(int x, int y) const;
    void fill(Rgba colour);
    // Shade every pixel by a light direction (a vecmath::Vec3, normalised here).
    void shade(const vecmath::Vec3& light);

private:
    int width_;
    int height_;
    std::vector<Rgba> pixels_;
};

}  // namespace pixelbuf
