// The single-attribute editors and number-list parsing, built from hand-made AttrDefs.
#include "editor/attr_editors.h"

#include <gtest/gtest.h>

#include <QLineEdit>
#include <QToolButton>
#include <memory>
#include <utility>
#include <vector>

namespace blockflow::editor {
namespace {

TEST(ParseNumberList, KeepsIntegersAndReportsBadTokens) {
  QString err;
  EXPECT_EQ(ParseNumberList("1, 8 8,2", &err), nlohmann::json::parse("[1, 8, 8, 2]"));
  EXPECT_TRUE(ParseNumberList("1, 8 8,2", &err)[0].is_number_integer());
  EXPECT_EQ(ParseNumberList("[0.5, -2]", &err), nlohmann::json::parse("[0.5, -2]"));
  EXPECT_TRUE(ParseNumberList("1, x", &err).is_null());
  EXPECT_EQ(err, "'x' is not a number");
  EXPECT_EQ(FormatNumberList(nlohmann::json::parse("[1, 2.5]")), "1, 2.5");
}

TEST(ParseNumberList, NumberListsRefuseNaNAndInf) {
  // A NaN in a node's JSON is saved as null: the file would no longer load.
  for (const char* text : {"1, nan", "inf", "2 -inf"}) {
    QString err;
    EXPECT_TRUE(ParseNumberList(text, &err).is_null()) << text;
    EXPECT_TRUE(err.contains("not a finite number")) << err.toStdString();
  }
}

// A host that records what an editor commits and reports; its file dialog picks "picked.npy".
struct Recorder {
  std::vector<std::pair<std::string, nlohmann::json>> commits;
  std::vector<QString> reports;
  AttrEditorHost Host() {
    AttrEditorHost host;
    host.commit = [this](const std::string& attr, const nlohmann::json& value) {
      commits.emplace_back(attr, value);
    };
    host.commit_patch = [this](const nlohmann::json& patch) { commits.emplace_back("", patch); };
    host.report = [this](const QString& text, bool) { reports.push_back(text); };
    host.choose_file = [](const QString&, FileKind) { return QString("picked.npy"); };
    return host;
  }
};

TEST(MakeAttrEditor, AListWithALengthGetsOneFieldPerValue) {
  AttrDef def;
  def.name = "window";
  def.type = AttrType::kFloats;
  def.length = 6;
  Recorder r;
  std::unique_ptr<QWidget> w(
      MakeAttrEditor(def, nlohmann::json::array({0.5, 1, 2, 3, 4, 5}), r.Host()));
  const auto fields = w->findChildren<QLineEdit*>();
  ASSERT_EQ(fields.size(), 6);
  EXPECT_EQ(fields[0]->text(), "0.5");
  EXPECT_EQ(fields[5]->objectName(), "window_5");
  // A partly filled list is refused with the count the schema gives.
  fields[5]->clear();
  emit fields[5]->editingFinished();
  ASSERT_EQ(r.reports.size(), 1u);
  EXPECT_EQ(r.reports[0], "window needs 6 numbers");
  EXPECT_TRUE(r.commits.empty());
  fields[5]->setText("7");
  emit fields[5]->editingFinished();
  ASSERT_EQ(r.commits.size(), 1u);
  EXPECT_EQ(r.commits[0].first, "window");
  EXPECT_EQ(r.commits[0].second, nlohmann::json::array({0.5, 1, 2, 3, 4, 7}));
  // All fields empty: the attribute is removed, so its default applies.
  for (QLineEdit* f : fields) f->clear();
  emit fields[0]->editingFinished();
  ASSERT_EQ(r.commits.size(), 2u);
  EXPECT_TRUE(r.commits[1].second.is_null());
}

TEST(MakeAttrEditor, AListWithoutALengthIsOneLine) {
  AttrDef def;
  def.name = "axes";
  def.type = AttrType::kInts;
  def.default_value = nlohmann::json::array({0, 1});
  Recorder r;
  std::unique_ptr<QWidget> w(MakeAttrEditor(def, nullptr, r.Host()));
  auto* edit = qobject_cast<QLineEdit*>(w.get());
  ASSERT_NE(edit, nullptr);
  EXPECT_EQ(edit->placeholderText(), "0, 1");
  edit->setText("3 4 5");
  emit edit->editingFinished();
  ASSERT_EQ(r.commits.size(), 1u);
  EXPECT_EQ(r.commits[0].second, nlohmann::json::array({3, 4, 5}));
}

TEST(MakeAttrEditor, AFileAttributeHasAFileChooser) {
  AttrDef def;
  def.name = "table";
  def.type = AttrType::kString;
  def.file_kind = FileKind::kNpy;
  Recorder r;
  std::unique_ptr<QWidget> w(MakeAttrEditor(def, "old.npy", r.Host()));
  auto* edit = w->findChild<QLineEdit*>("table_file");
  auto* browse = w->findChild<QToolButton*>();
  ASSERT_TRUE(edit && browse);
  EXPECT_EQ(edit->text(), "old.npy");
  EXPECT_EQ(browse->toolTip(), "Choose a .npy file");
  browse->click();
  EXPECT_EQ(edit->text(), "picked.npy");
  ASSERT_EQ(r.commits.size(), 1u);
  EXPECT_EQ(r.commits[0], std::make_pair(std::string("table"), nlohmann::json("picked.npy")));
  // Without a file kind the same attribute is a plain line edit.
  def.file_kind = FileKind::kNone;
  std::unique_ptr<QWidget> plain(MakeAttrEditor(def, "old.npy", r.Host()));
  EXPECT_NE(qobject_cast<QLineEdit*>(plain.get()), nullptr);
  EXPECT_EQ(plain->findChild<QToolButton*>(), nullptr);
}

}  // namespace
}  // namespace blockflow::editor
