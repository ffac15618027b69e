// What the `blockflow` program tells its user besides results: the help texts, usage errors
// and error lines in the contract's form, "error: GRAPH.json: node 'x' (Op): what and why".
//
//   if (!parsed.ok()) return UsageError(err, "run", parsed.status().message());   // exit 2
//   PrintError(err, "g.json", status.message());   // one "error: g.json: ..." line per line
#pragma once

#include <ostream>
#include <string>

namespace blockflow::cli {

/// The program's overview: commands and exit statuses.
const char* MainUsage();
/// True when `command` has a help text.
bool HasHelp(const std::string& command);
/// Prints a command's usage line and details.
void PrintHelp(std::ostream& out, const std::string& command);
/// Prints "error: message", the command's usage line and a hint; returns the usage exit status.
int UsageError(std::ostream& err, const std::string& command, const std::string& message);
/// Prints each line of `message` as "error: FILE: line" (a line already naming the file is
/// printed as it is).
void PrintError(std::ostream& err, const std::string& file, const std::string& message);

}  // namespace blockflow::cli
