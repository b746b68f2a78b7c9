#include <algorithm>
#include <iostream>
#include <memory>
#include <vector>

namespace geo {
template <typename T>
struct Vec2 {
    T x{}, y{};
    constexpr Vec2 operator+(const Vec2& o) const noexcept { return {x + o.x, y + o.y}; }
    auto operator<=>(const Vec2&) const = default;
};
}  // namespace geo

class Shape {
public:
    virtual ~Shape() = default;
    [[nodiscard]] virtual double area() const = 0;
};

class Circle final : public Shape {
    double r_;
public:
    explicit Circle(double r) : r_(r) {}
    double area() const override { return 3.14159265358979 * r_ * r_; }
};

int main() {
    std::vector<std::unique_ptr<Shape>> shapes;
    for (int i = 0; i < 5; ++i) shapes.push_back(std::make_unique<Circle>(i * 0.5));
    std::sort(shapes.begin(), shapes.end(),
              [](const auto& a, const auto& b) { return a->area() > b->area(); });
    geo::Vec2<int> v{1, 2};
    v = v + geo::Vec2<int>{3, 4};
    std::cout << "v=(" << v.x << ", " << v.y << ")\n" << std::endl;
    return shapes.empty() ? 1 : 0;
}
