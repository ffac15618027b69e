// Block search: one ranking for the palette and the quick-add popup. Exact name first, then a
// name prefix, then a fuzzy match on the name's words ("dwconv", "depthwise filter"), then the
// description and category. A wire-drop filter keeps only blocks with a port that the wire fits.
//
//   std::vector<OpSearchEntry> all = SearchEntries(OpRegistry::Global());
//   for (int i : RankOps(all, "dwconv")) Show(all[i].name);  // best first; empty: no matches
#pragma once

#include <QString>
#include <QStringList>
#include <vector>

#include "core/dtype.h"

namespace blockflow {
class OpRegistry;
class OpSchema;
}  // namespace blockflow

namespace blockflow::editor {

/// How a block matched a search, best first.
enum class MatchTier { kExact = 0, kPrefix = 1, kFuzzy = 2, kDescription = 3, kNone = 4 };

/// What a search looks at for one block.
struct OpSearchEntry {
  const OpSchema* schema = nullptr;  // may be null in tests
  QString name, category, doc;
};

/// The entries of every block of `registry`, sorted by name.
std::vector<OpSearchEntry> SearchEntries(const OpRegistry& registry);

/// How well `query` matches one block: the tier, and a score within the tier (higher is better).
struct OpMatch {
  MatchTier tier = MatchTier::kNone;
  int score = 0;
};
OpMatch MatchOp(const OpSearchEntry& entry, const QString& query);

/// The indices of the entries that match `query`, best first (tier, score, shorter name, name).
/// An empty query matches every entry, in the given order.
std::vector<int> RankOps(const std::vector<OpSearchEntry>& entries, const QString& query);

/// The words of a block name, lower case: "Conv2DBackpropFilter" → conv2d, backprop, filter.
QStringList NameWords(const QString& name);

/// What a wire dropped on empty canvas needs from a new block: an input that accepts `dtype`
/// (the wire comes from an output), or an output that an input accepting `dtypes` can take
/// (the wire comes from an input). An unknown dtype / empty list accepts any.
struct WireFit {
  bool from_output = true;
  std::vector<DType> dtypes;
};
/// The index of the first port of `schema` that fits (an input index when from_output, else an
/// output index), or -1.
int FittingPort(const OpSchema& schema, const WireFit& fit);

}  // namespace blockflow::editor
