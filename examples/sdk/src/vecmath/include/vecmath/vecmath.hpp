// vecmath: the example SDK's core math library. It throws on bad input on purpose, so a build
// with the wrong exception model (legacy Emscripten EH vs native wasm EH) fails the link test.
#pragma once

#include <stdexcept>
#include <string>

namespace vecmath {

struct Vec3 {
    float x = 0, y = 0, z = 0;
};

class parse_error : public std::runtime_error {
public:
    explicit parse_error(const std::string& what) : std::runtime_error(what) {}
};

Vec3 add(const Vec3& a, const Vec3& b);
Vec3 scale(const Vec3& v, float s);
float dot(const Vec3& a, const Vec3& b);
float length(const Vec3& v);
Vec3 normalize(const Vec3& v);  // throws std::domain_error for the zero vector
Vec3 parse_vec3(const std::string& text);  // "x,y,z"; throws parse_error otherwise

}  // namespace vecmath
