// The `blockflow` program's text output: a plain table with columns padded to their widest
// cell, and number formats.
//
//   Table t({"node", "ms"}, {false, true});
//   t.Add({"dx", FormatMs(1.25)});
//   t.Print(std::cout);   // node   ms\ndx  1.250
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace blockflow::cli {

/// A number in 6 significant digits ("%.6g").
std::string FormatNumber(double v);
/// Milliseconds: 3 decimals below 10, else 1.
std::string FormatMs(double ms);
/// A byte count in binary units: "512 B", "1.5 KiB", "12.0 MiB", "2.00 GiB".
std::string FormatBytes(size_t bytes);

/// A plain text table: columns padded to their widest cell, numbers right-aligned.
class Table {
 public:
  /// Column titles, and per column whether it is right-aligned (default: left).
  explicit Table(std::vector<std::string> header, std::vector<bool> right_align = {});
  /// Appends a row (padded or cut to the header's width).
  void Add(std::vector<std::string> row);
  /// True when no row was added.
  bool empty() const { return rows_.empty(); }
  /// Prints the header and the rows, one line each.
  void Print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace blockflow::cli
