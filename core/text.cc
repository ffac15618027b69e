#include "core/text.h"

#include <algorithm>
#include <cctype>

namespace blockflow {

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string DidYouMean(const std::string& name, const std::vector<std::string>& candidates,
                       size_t max_distance) {
  if (max_distance == 0) max_distance = std::max<size_t>(2, name.size() / 3);
  std::string best;
  size_t best_d = max_distance + 1;
  for (const auto& c : candidates) {
    const size_t d = EditDistance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::string JoinNames(const std::vector<std::string>& names, const std::string& empty) {
  if (names.empty()) return empty;
  std::string s = names[0];
  for (size_t i = 1; i < names.size(); ++i) s += ", " + names[i];
  return s;
}

std::string JoinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + lines[i];
  return out;
}

}  // namespace blockflow
