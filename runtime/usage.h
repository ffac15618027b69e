// What the `blockflow` program tells its user besides results: the help texts, usage errors
// and error lines in the contract's form, "error: GRAPH.json: node 'x' (Op): what and why".
//
//   if (!parsed.ok()) return UsageError(err, "run", parsed.status().message());   // exit 2
//   PrintError(err, "g.json", status.message());   // one "error: g.json: ..." line per line
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "core/status.h"

namespace blockflow::cli {

/// The program's overview: commands and exit statuses.
const char* MainUsage();
/// True when `command` has a help text.
bool HasHelp(const std::string& command);
/// Prints a command's usage line and details.
void PrintHelp(std::ostream& out, const std::string& command);
/// Prints "error: message", the command's usage line and a hint; returns the usage exit status.
int UsageError(std::ostream& err, const std::string& command, const std::string& message);
/// What a command does once its arguments are parsed: with `help`, prints its help to `out` and
/// returns 0; when `parsed` failed, prints the usage error and returns 2; else nullopt (go on).
std::optional<int> HelpOrUsageError(const std::string& command, bool help, const Status& parsed,
                                    std::ostream& out, std::ostream& err);
/// The same for parsed arguments that have a `help` member.
template <typename Args>
std::optional<int> HelpOrUsageError(const std::string& command, const Expected<Args>& parsed,
                                    std::ostream& out, std::ostream& err) {
  return HelpOrUsageError(command, parsed.ok() && parsed->help, parsed.status(), out, err);
}
/// Prints each line of `message` as "error: FILE: line" (a line already naming the file is
/// printed as it is).
void PrintError(std::ostream& err, const std::string& file, const std::string& message);

}  // namespace blockflow::cli
