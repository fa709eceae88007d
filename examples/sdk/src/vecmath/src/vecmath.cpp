#include "vecmath/vecmath.hpp"

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace vecmath {

Vec3 add(const Vec3& a, const Vec3& b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }

Vec3 scale(const Vec3& v, float s) { return {v.x * s, v.y * s, v.z * s}; }

float dot(const Vec3& a, const Vec3& b) { return a.x * b.x + a.y * b.y + a.z * b.z; }

float length(const Vec3& v) { return std::sqrt(dot(v, v)); }

Vec3 normalize(const Vec3& v) {
    const float len = length(v);
    if (len == 0.0f) {
        throw std::domain_error("vecmath::normalize: zero vector");
    }
    return scale(v, 1.0f / len);
}

Vec3 parse_vec3(const std::string& text) {
    std::vector<float> parts;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        char* end = nullptr;
        const float value = std::strtof(item.c_str(), &end);
        if (item.empty() || end == item.c_str() || *end != '\0') {
            throw parse_error("vecmath::parse_vec3: not a number: '" + item + "'");
        }
        parts.push_back(value);
    }
    if (parts.size() != 3) {
        throw parse_error("vecmath::parse_vec3: expected x,y,z; got '" + text + "'");
    }
    return {parts[0], parts[1], parts[2]};
}

}  // namespace vecmath
