// `blockflow ops`: the block catalogue, as text, JSON or Markdown.
#include "core/schema.h"
#include "runtime/args.h"
#include "runtime/catalog.h"
#include "runtime/cli.h"
#include "runtime/commands.h"
#include "runtime/usage.h"

namespace blockflow::cli {

int CommandOps(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Expected<ParsedArgs> p = ParseFlags(args, {{"--json"}, {"--markdown"}});
  if (auto rc = HelpOrUsageError("ops", p, out, err)) return *rc;
  if (!p->positional.empty())
    return UsageError(err, "ops", "unexpected argument '" + p->positional[0] + "'");
  if (p->Has("--json") && p->Has("--markdown"))
    return UsageError(err, "ops", "--json and --markdown exclude each other");
  const OpRegistry& registry = OpRegistry::Global();
  if (p->Has("--json")) {
    out << CatalogJson(registry).dump(2) << "\n";
  } else if (p->Has("--markdown")) {
    out << CatalogMarkdown(registry);
  } else {
    out << CatalogText(registry);
  }
  return kExitOk;
}

}  // namespace blockflow::cli
