#include "editor/const_value_editor.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QToolButton>

namespace blockflow::editor {

namespace {

// The modes of the editor, in the order of its combo box.
enum Mode { kValues = 0, kFill = 1, kFile = 2 };

}  // namespace

QWidget* MakeConstValueEditor(const AttrDef& value_def, const AttrDef& file_def,
                              const nlohmann::json& attrs, const AttrEditorHost& host) {
  auto* w = new QWidget;
  auto* h = new QHBoxLayout(w);
  h->setContentsMargins(0, 0, 0, 0);
  h->setSpacing(4);
  auto* mode = new QComboBox;
  mode->addItems({"values", "fill", FileSuffix(file_def.file_kind) + " file"});
  mode->setObjectName("value_mode");
  auto* edit = new QLineEdit;
  edit->setObjectName("value_text");
  QToolButton* browse = NewBrowseButton(file_def.file_kind);
  h->addWidget(mode);
  h->addWidget(edit, 1);
  h->addWidget(browse);
  const std::string& value_name = value_def.name;
  const std::string& file_name = file_def.name;
  int m = kValues;
  if (attrs.contains(file_name)) {
    m = kFile;
    edit->setText(JsonText(attrs[file_name]));
  } else if (attrs.contains(value_name) && attrs[value_name].is_number()) {
    m = kFill;
    edit->setText(QString::fromStdString(attrs[value_name].dump()));
  } else if (attrs.contains(value_name)) {
    edit->setText(FormatNumberList(attrs[value_name]));
  }
  mode->setCurrentIndex(m);
  auto placeholder = [edit, browse](int mode_index) {
    static const char* kHints[] = {"row-major numbers: 1, 2, 3, 4",
                                   "one number that fills the shape",
                                   "file name, relative to the graph"};
    edit->setPlaceholderText(kHints[mode_index]);
    browse->setVisible(mode_index == kFile);
  };
  placeholder(m);
  QObject::connect(mode, &QComboBox::activated, edit, [placeholder, edit](int i) {
    placeholder(i);
    edit->clear();
    edit->setFocus();
  });
  auto commit = [mode, edit, value_name, file_name, host] {
    const QString t = edit->text().trimmed();
    nlohmann::json patch = {{value_name, nullptr}, {file_name, nullptr}};
    if (!t.isEmpty()) {
      if (mode->currentIndex() == kFile) {
        patch[file_name] = t.toStdString();
      } else {
        QString err;
        nlohmann::json v = ParseNumberList(t, &err);
        if (v.is_null() || (mode->currentIndex() == kFill && v.size() != 1)) {
          const QString reason = err.isEmpty() ? QString("fill needs one number")
                                               : QString::fromStdString(value_name) + ": " + err;
          MarkFieldError(edit, reason);
          host.report(reason, true);
          return;
        }
        patch[value_name] = mode->currentIndex() == kFill ? v[0] : v;
      }
    }
    MarkFieldError(edit, QString());
    host.commit_patch(patch);
  };
  QObject::connect(edit, &QLineEdit::editingFinished, edit, commit);
  QObject::connect(browse, &QToolButton::clicked, edit,
                   [edit, commit, host, value_name, kind = file_def.file_kind] {
                     const QString f = host.choose_file(QString::fromStdString(value_name), kind);
                     if (f.isEmpty()) return;
                     edit->setText(f);
                     commit();
                   });
  return w;
}

}  // namespace blockflow::editor
