// Block search: the ranking table (exact, prefix, fuzzy name, description), the same ranking in
// the palette and quick-add, the "no matches" line, and the wire-fit filter.
#include "editor/search.h"

#include <gtest/gtest.h>

#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QTest>

#include "core/schema.h"
#include "editor/palette_widget.h"

namespace blockflow::editor {
namespace {

std::vector<std::string> Ranked(const QString& query) {
  const std::vector<OpSearchEntry> all = SearchEntries(OpRegistry::Global());
  std::vector<std::string> out;
  for (int i : RankOps(all, query)) out.push_back(all[static_cast<size_t>(i)].name.toStdString());
  return out;
}

int RankOf(const std::vector<std::string>& ranked, const std::string& op) {
  auto it = std::find(ranked.begin(), ranked.end(), op);
  return it == ranked.end() ? -1 : static_cast<int>(it - ranked.begin());
}

// The ranking table: a query, the blocks expected first (in this order), and blocks that must
// come later or not at all.
struct RankCase {
  const char* query;
  std::vector<std::string> first;
  std::vector<std::string> later;
};

TEST(Search, RankingTable) {
  const std::vector<RankCase> cases = {
      // Exact name beats a description that mentions the word (Const "fills shape").
      {"fill", {"Fill"}, {"Const"}},
      {"Fill", {"Fill"}, {"Const"}},
      // Exact, spelled with spaces or in lower case.
      {"conv2dbackpropinput", {"Conv2DBackpropInput"}, {"DepthwiseConv2dNativeBackpropInput"}},
      {"Placeholder", {"Placeholder"}, {}},
      // Prefix: shortest first; the fuzzy depthwise matches come after every prefix match.
      {"conv",
       {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"},
       {"DepthwiseConv2dNative"}},
      {"random", {"RandomUniform", "RandomStandardNormal"}, {}},
      // Fuzzy on the name's words.
      {"dwconv",
       {"DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
        "DepthwiseConv2dNativeBackpropFilter"},
       {}},
      {"depthwise filter", {"DepthwiseConv2dNativeBackpropFilter"}, {}},
      {"filter depthwise", {"DepthwiseConv2dNativeBackpropFilter"}, {}},
      {"backprop input", {"Conv2DBackpropInput", "DepthwiseConv2dNativeBackpropInput"}, {}},
      {"rsn", {"RandomStandardNormal"}, {}},
      {"zeros", {"ZerosLike"}, {}},
  };
  for (const RankCase& c : cases) {
    const std::vector<std::string> ranked = Ranked(c.query);
    ASSERT_GE(ranked.size(), c.first.size()) << c.query;
    for (size_t i = 0; i < c.first.size(); ++i) {
      EXPECT_EQ(ranked[i], c.first[i]) << "query '" << c.query << "' rank " << i;
    }
    for (const std::string& op : c.later) {
      const int r = RankOf(ranked, op);
      EXPECT_TRUE(r < 0 || r >= static_cast<int>(c.first.size()))
          << "query '" << c.query << "': " << op << " at " << r;
    }
  }
}

TEST(Search, TiersAndDescriptions) {
  const std::vector<OpSearchEntry> all = SearchEntries(OpRegistry::Global());
  auto entry = [&](const QString& name) {
    for (const OpSearchEntry& e : all) {
      if (e.name == name) return e;
    }
    ADD_FAILURE() << name.toStdString();
    return OpSearchEntry{};
  };
  EXPECT_EQ(MatchOp(entry("Fill"), "fill").tier, MatchTier::kExact);
  EXPECT_EQ(MatchOp(entry("Const"), "fill").tier, MatchTier::kDescription);
  EXPECT_EQ(MatchOp(entry("Conv2D"), "conv").tier, MatchTier::kPrefix);
  EXPECT_EQ(MatchOp(entry("DepthwiseConv2dNative"), "dwconv").tier, MatchTier::kFuzzy);
  // A fuzzy match starts at a word: "add" is not RandomStandardNormal's r-a-n-d-...-d.
  EXPECT_EQ(MatchOp(entry("RandomStandardNormal"), "add").tier, MatchTier::kNone);
  // The category counts as a description: every convolution block, none other.
  const std::vector<std::string> conv = Ranked("convolution");
  EXPECT_EQ(conv.size(), 6u);
  for (const std::string& op : conv) EXPECT_NE(op.find("onv2"), std::string::npos) << op;
  EXPECT_TRUE(Ranked("xyzzy").empty());
  // An empty query lists everything, by name.
  EXPECT_EQ(Ranked("").size(), all.size());
  EXPECT_EQ(Ranked("   ").size(), all.size());
}

TEST(Search, NameWords) {
  EXPECT_EQ(NameWords("Conv2DBackpropFilter"), (QStringList{"conv2d", "backprop", "filter"}));
  EXPECT_EQ(NameWords("DepthwiseConv2dNative"), (QStringList{"depthwise", "conv2d", "native"}));
  EXPECT_EQ(NameWords("ShapeN"), (QStringList{"shape", "n"}));
}

TEST(Search, PaletteAndQuickAddShareTheRankingAndSayNoMatches) {
  PaletteWidget palette(OpRegistry::Global());
  QuickAddPopup popup(OpRegistry::Global());
  for (const char* q : {"fill", "dwconv", "depthwise filter", "conv", "backprop input"}) {
    QStringList expected;
    for (const std::string& op : Ranked(q)) expected << QString::fromStdString(op);
    palette.search()->setText(q);
    EXPECT_EQ(palette.ShownOps(), expected) << q;
    EXPECT_TRUE(palette.no_matches()->isHidden()) << q;
    popup.SetFilter(q);
    EXPECT_EQ(popup.ShownOps(), expected) << q;
    EXPECT_TRUE(popup.no_matches()->isHidden()) << q;
    EXPECT_EQ(popup.list()->currentRow(), 0) << q;
  }
  palette.search()->setText("xyzzy");
  EXPECT_TRUE(palette.ShownOps().isEmpty());
  EXPECT_FALSE(palette.no_matches()->isHidden());
  EXPECT_EQ(palette.no_matches()->text(), "No blocks match 'xyzzy'.");
  popup.SetFilter("xyzzy");
  EXPECT_TRUE(popup.ShownOps().isEmpty());
  EXPECT_FALSE(popup.no_matches()->isHidden());
  // Cleared: the category tree again, every block.
  palette.search()->clear();
  EXPECT_EQ(palette.ShownOps().size(), static_cast<int>(OpRegistry::Global().All().size()));
  EXPECT_GT(palette.tree()->topLevelItem(0)->childCount(), 0);
}

TEST(Search, WireFitKeepsBlocksWithAFittingPort) {
  const OpRegistry& r = OpRegistry::Global();
  // From a float32 output: a block needs an input that takes float32.
  const WireFit from_float{true, {DType::kFloat32}};
  EXPECT_EQ(FittingPort(*r.Find("Identity"), from_float), 0);
  EXPECT_EQ(FittingPort(*r.Find("Conv2DBackpropInput"), from_float), 1);  // filter, not sizes
  EXPECT_EQ(FittingPort(*r.Find("Const"), from_float), -1);               // no inputs
  EXPECT_EQ(FittingPort(*r.Find("Placeholder"), from_float), -1);
  // From an int32/int64 input (Reshape.shape): a block needs an output giving one of them.
  const WireFit into_sizes{false, {DType::kInt32, DType::kInt64}};
  EXPECT_EQ(FittingPort(*r.Find("Shape"), into_sizes), 0);
  EXPECT_EQ(FittingPort(*r.Find("Const"), into_sizes), 0);
  EXPECT_EQ(FittingPort(*r.Find("Conv2D"), into_sizes), -1);  // float outputs only

  QuickAddPopup popup(r);
  popup.Popup(QPoint(0, 0), from_float);
  const QStringList shown = popup.ShownOps();
  EXPECT_TRUE(shown.contains("Identity"));
  EXPECT_FALSE(shown.contains("Const"));
  EXPECT_FALSE(shown.contains("Placeholder"));
  popup.SetFilter("const");
  EXPECT_TRUE(popup.ShownOps().isEmpty());
  EXPECT_EQ(popup.no_matches()->text(), "No blocks match 'const' with a port for this wire.");
  popup.hide();
}

}  // namespace
}  // namespace blockflow::editor
