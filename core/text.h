// Small text helpers for messages.
//
//   DidYouMean("Conv2DBackpropFiltr", {"Conv2D", "Conv2DBackpropFilter"})
//       == " (did you mean 'Conv2DBackpropFilter'?)"
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace blockflow {

/// One row of an enum's name table, for NameIn.
template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

/// The name `table` gives `value`, or `fallback` when it has none.
template <typename E, size_t N>
constexpr std::string_view NameIn(const EnumName<E> (&table)[N], E value,
                                  std::string_view fallback) {
  for (const EnumName<E>& row : table) {
    if (row.value == value) return row.name;
  }
  return fallback;
}

/// Levenshtein distance between two strings, ignoring ASCII case.
size_t EditDistance(const std::string& a, const std::string& b);

/// " (did you mean 'X'?)" for the candidate closest to `name`, when it is at most
/// `max_distance` edits away (0: about a third of the name's length, at least 2); else "".
std::string DidYouMean(const std::string& name, const std::vector<std::string>& candidates,
                       size_t max_distance = 0);

/// "a, b, c" for a list of names; `empty` when there are none.
std::string JoinNames(const std::vector<std::string>& names, const std::string& empty = "none");

/// The lines joined by '\n' (no trailing newline): how a Status reports several problems.
std::string JoinLines(const std::vector<std::string>& lines);
/// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past
/// U+10FFFF), as JSON text must be.
bool IsValidUtf8(const std::string& s);

}  // namespace blockflow
