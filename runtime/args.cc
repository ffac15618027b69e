#include "runtime/args.h"

#include <algorithm>

#include "core/graph.h"
#include "core/limits.h"
#include "core/text.h"

namespace blockflow::cli {
namespace {

// Parses `args` with the shared flags plus `more`, filling what `run` and `bench` share.
Expected<ParsedArgs> ParseGraphArgs(const std::vector<std::string>& args,
                                    const std::vector<FlagSpec>& more, GraphArgs* out) {
  std::vector<FlagSpec> specs = {{"--feed", true, true},
                                 {"--threads", true},
                                 {"--reference"},
                                 {"--allow-outside-files"},
                                 {"--memory-limit", true}};
  specs.insert(specs.end(), more.begin(), more.end());
  ASSIGN_OR_RETURN(ParsedArgs p, ParseFlags(args, specs));
  out->help = p.help;
  if (p.help) return p;
  if (p.positional.empty()) return InvalidArgument("missing GRAPH.json");
  if (p.positional.size() > 1)
    return InvalidArgument("unexpected argument '" + p.positional[1] + "'");
  out->graph = p.positional[0];
  for (const std::string& f : p.All("--feed")) {
    ASSIGN_OR_RETURN(auto feed, ParseFeedFlag(f));
    out->feeds.push_back(std::move(feed));
  }
  if (auto t = p.Last("--threads")) {
    ASSIGN_OR_RETURN(out->threads, ParseIntFlag("--threads", *t, 1));
  }
  out->reference = p.Has("--reference");
  out->allow_outside_files = p.Has("--allow-outside-files");
  if (auto m = p.Last("--memory-limit")) {
    ASSIGN_OR_RETURN(out->memory_limit, ParseMemoryLimitFlag(*m));
  }
  return p;
}

}  // namespace

bool ParsedArgs::Has(const std::string& name) const {
  return std::any_of(flags.begin(), flags.end(), [&](const auto& f) { return f.first == name; });
}

std::optional<std::string> ParsedArgs::Last(const std::string& name) const {
  std::optional<std::string> v;
  for (const auto& f : flags) {
    if (f.first == name) v = f.second;
  }
  return v;
}

std::vector<std::string> ParsedArgs::All(const std::string& name) const {
  std::vector<std::string> v;
  for (const auto& f : flags) {
    if (f.first == name) v.push_back(f.second);
  }
  return v;
}

Expected<ParsedArgs> ParseFlags(const std::vector<std::string>& args,
                                const std::vector<FlagSpec>& specs) {
  ParsedArgs p;
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (flags_done || arg.size() < 2 || arg[0] != '-') {
      p.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      p.help = true;
      continue;
    }
    std::string name = arg, value;
    bool inline_value = false;
    const size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    auto spec =
        std::find_if(specs.begin(), specs.end(), [&](const FlagSpec& s) { return s.name == name; });
    if (spec == specs.end()) {
      std::vector<std::string> names;
      names.reserve(specs.size());
      for (const FlagSpec& s : specs) names.push_back(s.name);
      return InvalidArgument("unknown option '" + name + "'" + DidYouMean(name, names, 2));
    }
    if (!spec->takes_value && inline_value)
      return InvalidArgument("option '" + name + "' takes no value");
    if (spec->takes_value && !inline_value) {
      if (i + 1 >= args.size()) return InvalidArgument("option '" + name + "' needs a value");
      value = args[++i];
    }
    if (!spec->repeatable && p.Has(name))
      return InvalidArgument("option '" + name + "' given twice");
    p.flags.emplace_back(name, value);
  }
  return p;
}

Expected<std::pair<std::string, std::string>> ParseFeedFlag(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return InvalidArgument("--feed '" + text + "': expected ID=FILE.npy");
  }
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

Expected<uint64_t> ParseMemoryLimitFlag(const std::string& text) {
  Expected<uint64_t> bytes = ParseByteSize(text);
  if (!bytes.ok()) return bytes.status().WithPrefix("--memory-limit: ");
  return bytes;
}

Expected<int> ParseIntFlag(const std::string& flag, const std::string& text, int min) {
  try {
    size_t used = 0;
    const long v = std::stol(text, &used);
    if (used == text.size() && v >= min && v <= 1'000'000) return static_cast<int>(v);
  } catch (const std::exception&) {
  }
  return InvalidArgument(flag + " '" + text + "': expected an integer >= " + std::to_string(min));
}

Expected<ShardFlag> ParseShardFlag(const std::string& text) {
  ShardFlag s;
  s.id = text;
  const size_t colon = text.rfind(':');
  if (colon != std::string::npos) {
    s.id = text.substr(0, colon);
    Expected<int> axis = ParseIntFlag("--shard " + text + ": AXIS", text.substr(colon + 1), 0);
    if (!axis.ok()) return axis.status();
    s.axis = *axis;
  }
  if (s.id.empty() || !IsValidNodeId(s.id)) {
    return InvalidArgument("--shard '" + text + "': expected NAME or NAME:AXIS");
  }
  return s;
}

Expected<CombineFlag> ParseCombineFlag(const std::string& text) {
  const size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || !Endpoint::Parse(text.substr(0, eq))) {
    return InvalidArgument("--combine '" + text + "': expected NAME=gather|sum|first");
  }
  CombineFlag c{text.substr(0, eq), text.substr(eq + 1)};
  if (c.rule != "gather" && c.rule != "sum" && c.rule != "first") {
    return InvalidArgument("--combine '" + text +
                           "': the rule must be gather, sum or first, not '" + c.rule + "'");
  }
  return c;
}

Expected<RunArgs> ParseRunArgs(const std::vector<std::string>& args) {
  RunArgs r;
  ASSIGN_OR_RETURN(ParsedArgs p, ParseGraphArgs(args,
                                                {{"--fetch", true, true},
                                                 {"--out", true},
                                                 {"--trace", true},
                                                 {"--profile"},
                                                 {"--shard", true, true},
                                                 {"--combine", true, true},
                                                 {"--deterministic"}},
                                                &r));
  if (p.help) return r;
  for (const std::string& f : p.All("--fetch")) {
    if (!Endpoint::Parse(f)) return InvalidArgument("--fetch '" + f + "': expected ID or ID:K");
    r.fetches.push_back(f);
  }
  if (auto o = p.Last("--out")) {
    if (o->empty()) return InvalidArgument("--out needs a folder");
    r.out_dir = *o;
  }
  if (auto t = p.Last("--trace")) {
    if (t->empty()) return InvalidArgument("--trace needs a file name");
    r.trace = *t;
  }
  r.profile = p.Has("--profile");
  for (const std::string& s : p.All("--shard")) {
    ASSIGN_OR_RETURN(ShardFlag shard, ParseShardFlag(s));
    for (const ShardFlag& other : r.shards) {
      if (other.id == shard.id)
        return InvalidArgument("--shard " + s + ": '" + shard.id + "' is split twice");
    }
    r.shards.push_back(std::move(shard));
  }
  for (const std::string& c : p.All("--combine")) {
    ASSIGN_OR_RETURN(CombineFlag combine, ParseCombineFlag(c));
    r.combine.push_back(std::move(combine));
  }
  r.deterministic = p.Has("--deterministic");
  if (r.shards.empty() && (!r.combine.empty() || r.deterministic)) {
    return InvalidArgument(std::string(r.deterministic ? "--deterministic" : "--combine") +
                           " only applies with --shard");
  }
  if (!r.shards.empty() && (r.profile || !r.trace.empty())) {
    return InvalidArgument(std::string(r.profile ? "--profile" : "--trace") +
                           " is not available with --shard");
  }
  return r;
}

Expected<BenchArgs> ParseBenchArgs(const std::vector<std::string>& args) {
  BenchArgs b;
  ASSIGN_OR_RETURN(ParsedArgs p,
                   ParseGraphArgs(args, {{"--warmup", true}, {"--repeat", true}, {"--json"}}, &b));
  if (p.help) return b;
  if (auto v = p.Last("--warmup")) {
    ASSIGN_OR_RETURN(b.warmup, ParseIntFlag("--warmup", *v, 0));
  }
  if (auto v = p.Last("--repeat")) {
    ASSIGN_OR_RETURN(b.repeat, ParseIntFlag("--repeat", *v, 1));
  }
  b.json = p.Has("--json");
  return b;
}

}  // namespace blockflow::cli
