// The block catalogue (`blockflow ops`), generated from the op registry's schemas:
// plain text for a terminal, JSON for tools, Markdown for docs/blocks.md.
//
//   RegisterBuiltinBlocks();
//   std::string md = CatalogMarkdown(OpRegistry::Global());
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/schema.h"

namespace blockflow::cli {

/// Every block with ports, dtypes, attrs (type, default, allowed values) and docs, as text.
std::string CatalogText(const OpRegistry& registry);
/// The same as a JSON object {"ops": [...]}, keys in a readable order (name first).
nlohmann::ordered_json CatalogJson(const OpRegistry& registry);
/// The same as Markdown: the generated docs/blocks.md.
std::string CatalogMarkdown(const OpRegistry& registry);

}  // namespace blockflow::cli
