#include "pixelbuf/pixelbuf.hpp"

#include <algorithm>
#include <stdexcept>

namespace pixelbuf {

Image::Image(int width, int height) : width_(width), height_(height) {
    if (width <= 0 || height <= 0) {
        throw std::invalid_argument("pixelbuf::Image: width and height must be positive");
    }
    pixels_.resize(static_cast<std::size_t>(width) * static_cast<std::size_t>(height));
}

Rgba& Image::at(int x, int y) {
    if (x < 0 || y < 0 || x >= width_ || y >= height_) {
        throw std::out_of_range("pixelbuf::Image::at: outside the image");
    }
    return pixels_[static_cast<std::size_t>(y) * static_cast<std::size_t>(width_) +
                   static_cast<std::size_t>(x)];
}

const Rgba& Image::at(int x, int y) const { return const_cast<Image*>(this)->at(x, y); }

void Image::fill(Rgba colour) { std::fill(pixels_.begin(), pixels_.end(), colour); }

void Image::shade(const vecmath::Vec3& light) {
    const vecmath::Vec3 dir = vecmath::normalize(light);
    for (int y = 0; y < height_; ++y) {
        for (int x = 0; x < width_; ++x) {
            const vecmath::Vec3 normal = vecmath::normalize(
                {static_cast<float>(x) / width_ - 0.5f, static_cast<float>(y) / height_ - 0.5f,
                 1.0f});
            const float k = std::max(0.0f, vecmath::dot(normal, dir));
            Rgba& p = at(x, y);
            p.r = static_cast<std::uint8_t>(p.r * k);
            p.g = static_cast<std::uint8_t>(p.g * k);
            p.b = static_cast<std::uint8_t>(p.b * k);
        }
    }
}

}  // namespace pixelbuf
