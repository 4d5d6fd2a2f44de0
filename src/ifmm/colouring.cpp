// Greedy box colouring with separation sigma (include/elliptica/ifmm/colouring.hpp).
#include "elliptica/ifmm/colouring.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include "elliptica/core/error.hpp"

namespace elliptica::ifmm {

int box_distance(const std::array<int, 3>& a, const std::array<int, 3>& b) {
  return std::max({std::abs(a[0] - b[0]), std::abs(a[1] - b[1]), std::abs(a[2] - b[2])});
}

std::vector<std::vector<int>> colour_boxes(const std::vector<std::array<int, 3>>& coords, int sigma) {
  if (sigma < 0) throw InvalidArgument("ifmm: colouring separation sigma must be >= 0, got " + std::to_string(sigma));
  const int n = static_cast<int>(coords.size());
  for (int b = 0; b < n; ++b)
    for (int d = 0; d < 3; ++d)
      if (coords[b][d] < 0)
        throw InvalidArgument("ifmm: colouring: box " + std::to_string(b) + " has a negative coordinate");
  // boxes by line (j, k), each line sorted by i
  std::map<std::pair<int, int>, std::vector<std::pair<int, int>>> lines;  // (k, j) -> [(i, box)]
  for (int b = 0; b < n; ++b) lines[{coords[b][2], coords[b][1]}].push_back({coords[b][0], b});
  for (auto& [key, v] : lines) {
    std::sort(v.begin(), v.end());
    for (std::size_t t = 1; t < v.size(); ++t)
      if (v[t].first == v[t - 1].first)
        throw InvalidArgument("ifmm: colouring: boxes " + std::to_string(v[t - 1].second) + " and " +
                              std::to_string(v[t].second) + " have the same coordinates");
  }
  std::vector<std::vector<int>> colours;
  if (sigma == 0) {
    for (int b = 0; b < n; ++b) colours.push_back({b});
    return colours;
  }
  if (sigma == 1) {
    std::vector<int> all(static_cast<std::size_t>(n));
    for (int b = 0; b < n; ++b) all[static_cast<std::size_t>(b)] = b;
    if (n > 0) colours.push_back(std::move(all));
    return colours;
  }
  // lines grouped by residue class (k mod sigma, j mod sigma): a colour visits one class
  std::map<std::pair<int, int>, std::vector<std::pair<int, int>>> classes;  // residue -> line keys
  for (const auto& [key, v] : lines) classes[{key.first % sigma, key.second % sigma}].push_back(key);
  std::size_t left = static_cast<std::size_t>(n);
  while (left > 0) {
    // first uncoloured box in (k, j, i) order = first entry of the first non-empty line
    const auto first = std::find_if(lines.begin(), lines.end(), [](const auto& kv) { return !kv.second.empty(); });
    const std::pair<int, int> res{first->first.first % sigma, first->first.second % sigma};
    std::vector<int> colour;
    for (const auto& key : classes[res]) {
      auto& v = lines[key];
      std::vector<std::pair<int, int>> rest;
      long long last = -(1LL << 40);
      for (const auto& [i, b] : v) {
        if (i - last >= sigma) {
          colour.push_back(b);
          last = i;
        } else {
          rest.push_back({i, b});
        }
      }
      v.swap(rest);
    }
    left -= colour.size();
    std::sort(colour.begin(), colour.end());
    colours.push_back(std::move(colour));
  }
  return colours;
}

}  // namespace elliptica::ifmm
