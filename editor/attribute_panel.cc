#include "editor/attribute_panel.h"

#include <cmath>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QIntValidator>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QRegularExpressionValidator>
#include <QScrollArea>
#include <QToolButton>
#include <QVBoxLayout>

#include "core/graph.h"
#include "editor/graph_document.h"

namespace blockflow::editor {

namespace {

const char* kErrorStyle = "QLineEdit { border: 1px solid #e5484d; }";

bool IsFourInts(const AttrDef& def) {
  if (def.type != AttrType::kInts) return false;
  if (def.default_value.is_array()) return def.default_value.size() == 4;
  return def.name == "strides" || def.name == "dilations";
}

QString JsonText(const nlohmann::json& v) {
  if (v.is_null()) return {};
  if (v.is_string()) return QString::fromStdString(v.get<std::string>());
  return QString::fromStdString(v.dump());
}

QString AttrTooltip(const AttrDef& def) {
  QString tip = QString("<b>%1</b> (%2)").arg(QString::fromStdString(def.name),
                                              QString::fromStdString(std::string(AttrTypeName(def.type))));
  if (!def.doc.empty()) tip += "<br>" + QString::fromStdString(def.doc).toHtmlEscaped();
  if (def.required) {
    tip += "<br><i>required</i>";
  } else if (!def.default_value.is_null()) {
    tip += "<br><i>default:</i> " + QString::fromStdString(def.default_value.dump()).toHtmlEscaped();
  }
  if (!def.allowed.empty()) {
    QStringList a;
    for (const auto& s : def.allowed) a << QString::fromStdString(s);
    tip += "<br><i>one of:</i> " + a.join(", ");
  }
  return tip;
}

}  // namespace

nlohmann::json ParseNumberList(const QString& text, QString* error) {
  nlohmann::json out = nlohmann::json::array();
  static const QRegularExpression kSep("[,\\s\\[\\]]+");
  static const QRegularExpression kInt("^[+-]?\\d+$");
  for (const QString& tok : text.split(kSep, Qt::SkipEmptyParts)) {
    bool ok = false;
    if (kInt.match(tok).hasMatch()) {
      const qlonglong v = tok.toLongLong(&ok);
      if (ok) out.push_back(static_cast<int64_t>(v));
    } else {
      const double v = tok.toDouble(&ok);
      if (ok && !std::isfinite(v)) {
        // JSON has no NaN or Inf: the graph file would get null and no longer load.
        if (error) *error = QString("'%1' is not a finite number (a graph file cannot hold it)").arg(tok);
        return nullptr;
      }
      if (ok) out.push_back(v);
    }
    if (!ok) {
      if (error) *error = QString("'%1' is not a number").arg(tok);
      return nullptr;
    }
  }
  return out;
}

QString FormatNumberList(const nlohmann::json& values) {
  if (!values.is_array()) return JsonText(values);
  QStringList parts;
  for (const auto& v : values) parts << QString::fromStdString(v.dump());
  return parts.join(", ");
}

AttributePanel::AttributePanel(GraphDocument* doc, QWidget* parent) : QWidget(parent), doc_(doc) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setObjectName("attr_scroll");
  layout->addWidget(scroll);
  Rebuild();
}

std::string AttributePanel::Key() const {
  const Node* node = doc_->graph().FindNode(id_);
  if (!node) return "";
  nlohmann::json k = {{"id", node->id}, {"op", node->op}, {"attrs", node->attrs}};
  if (node->ui.is_object() && node->ui.contains("feed")) k["feed"] = node->ui["feed"];
  return k.dump();
}

void AttributePanel::SetNode(const std::string& id) {
  if (id == id_ && Key() == shown_key_) {
    UpdateIssues();
    return;
  }
  id_ = id;
  Rebuild();
}

void AttributePanel::Refresh() {
  if (!id_.empty() && !doc_->graph().FindNode(id_)) id_.clear();
  if (Key() != shown_key_) {
    Rebuild();
  } else {
    UpdateIssues();
    UpdateVisibility();
  }
}

QWidget* AttributePanel::EditorFor(const std::string& name) const {
  auto it = editors_.find(name);
  return it == editors_.end() ? nullptr : it->second;
}

bool AttributePanel::IsRowVisible(const std::string& name) const {
  QWidget* w = EditorFor(name);
  return w && !w->isHidden();
}

QString AttributePanel::IssueText() const { return issues_ ? issues_->text() : QString(); }

QString AttributePanel::RelativeToGraph(const QString& path) const {
  const QString base = QString::fromStdString(doc_->graph().base_dir);
  if (base.isEmpty() || path.isEmpty()) return path;
  return QDir(QFileInfo(base).absoluteFilePath()).relativeFilePath(QFileInfo(path).absoluteFilePath());
}

void AttributePanel::Rebuild() {
  // Keep the keyboard focus on the same editor across the rebuild.
  std::string focused;
  for (QWidget* w = QApplication::focusWidget(); w && focused.empty(); w = w->parentWidget()) {
    for (const auto& [name, editor] : editors_) {
      if (editor == w) focused = name;
    }
  }
  editors_.clear();
  auto* scroll = findChild<QScrollArea*>("attr_scroll");
  // Rebuilds often happen inside a signal of one of the old editors: retire them later.
  if (QWidget* old = scroll->widget()) {
    for (QObject* child : old->findChildren<QObject*>()) child->blockSignals(true);
    scroll->takeWidget();
    old->hide();
    old->deleteLater();
  }
  host_ = new QWidget;
  auto* v = new QVBoxLayout(host_);
  v->setContentsMargins(10, 8, 10, 8);
  v->setSpacing(8);
  header_ = new QLabel;
  header_->setWordWrap(true);
  header_->setTextFormat(Qt::RichText);
  v->addWidget(header_);
  form_ = new QFormLayout;
  form_->setLabelAlignment(Qt::AlignRight | Qt::AlignVCenter);
  form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form_->setHorizontalSpacing(10);
  form_->setVerticalSpacing(6);
  v->addLayout(form_);
  issues_ = new QLabel;
  issues_->setWordWrap(true);
  issues_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(issues_);
  v->addStretch(1);
  scroll->setWidget(host_);

  const Node* node = doc_->graph().FindNode(id_);
  shown_key_ = Key();
  if (!node) {
    header_->setText("<span style='color:#8a919a'>Select a node to edit its attributes.</span>");
    issues_->clear();
    return;
  }
  const OpSchema* schema = doc_->registry().Find(node->op);
  QString head = QString("<span style='font-size:11pt; font-weight:bold'>%1</span>").arg(QString::fromStdString(node->op));
  if (schema) {
    head += QString(" <span style='color:#8a919a'>%1</span>").arg(QString::fromStdString(schema->category()));
    if (!schema->doc().empty()) {
      head += "<br><span style='color:#aeb4bc'>" + QString::fromStdString(schema->doc()).toHtmlEscaped() + "</span>";
    }
  }
  header_->setText(head);

  // Node id: unique and valid, checked as it is typed.
  auto* id_edit = new QLineEdit(QString::fromStdString(node->id));
  id_edit->setToolTip("Node id: unique; letters, digits and _ . - /");
  connect(id_edit, &QLineEdit::textEdited, this, [this, id_edit](const QString& text) {
    const std::string t = text.toStdString();
    const bool ok = t == id_ || (IsValidNodeId(t) && !doc_->graph().FindNode(t));
    id_edit->setStyleSheet(ok ? "" : kErrorStyle);
    if (!ok) {
      emit statusMessage(IsValidNodeId(t) ? QString("id '%1' is already used").arg(text)
                                          : QString("invalid id '%1': use letters, digits and _ . - /").arg(text),
                         true);
    }
  });
  connect(id_edit, &QLineEdit::editingFinished, this, [this, id_edit] {
    const std::string t = id_edit->text().toStdString();
    if (t == id_) return;
    const std::string old = id_;
    id_ = t;  // follow the node through the rename
    const Status st = doc_->RenameNode(old, t);
    if (!st.ok()) {
      id_ = old;
      id_edit->setText(QString::fromStdString(old));
      id_edit->setStyleSheet("");
      emit statusMessage(QString::fromStdString(st.message()), true);
      return;
    }
    emit nodeRenamed(QString::fromStdString(t));
  });
  form_->addRow("id", id_edit);
  editors_["id"] = id_edit;

  if (schema) {
    const bool is_const = node->op == "Const";
    for (const AttrDef& def : schema->attrs()) {
      if (is_const && (def.name == "value" || def.name == "file")) continue;
      const nlohmann::json current = node->attrs.contains(def.name) ? node->attrs[def.name] : nlohmann::json();
      QWidget* editor = MakeEditor(def, current);
      editor->setToolTip(AttrTooltip(def));
      auto* label = new QLabel(QString::fromStdString(def.name) + (def.required ? " *" : ""));
      label->setToolTip(AttrTooltip(def));
      form_->addRow(label, editor);
      editors_[def.name] = editor;
    }
    if (is_const) {
      QWidget* w = MakeConstValueEditor();
      form_->addRow("value", w);
      editors_["value"] = w;
    }
    if (node->op == "Placeholder") {
      QWidget* w = MakeFeedEditor();
      form_->addRow("feed", w);
      editors_["feed"] = w;
    }
  }
  UpdateIssues();
  UpdateVisibility();
  if (!focused.empty()) {
    if (QWidget* w = EditorFor(focused)) w->setFocus();
  }
}

QWidget* AttributePanel::MakeEditor(const AttrDef& def, const nlohmann::json& current) {
  const std::string name = def.name;
  const nlohmann::json shown = current.is_null() ? def.default_value : current;
  switch (def.type) {
    case AttrType::kEnum:
    case AttrType::kDType: {
      auto* combo = new QComboBox;
      QStringList items;
      if (def.type == AttrType::kEnum) {
        for (const auto& a : def.allowed) items << QString::fromStdString(a);
      } else {
        for (DType d : AllDTypes()) items << QString::fromStdString(std::string(DTypeName(d)));
      }
      if (shown.is_null()) items.prepend("");
      combo->addItems(items);
      if (shown.is_string()) combo->setCurrentText(QString::fromStdString(shown.get<std::string>()));
      connect(combo, &QComboBox::activated, this, [this, combo, name] {
        const QString t = combo->currentText();
        Commit(name, t.isEmpty() ? nlohmann::json() : nlohmann::json(t.toStdString()));
      });
      return combo;
    }
    case AttrType::kBool: {
      auto* box = new QCheckBox;
      box->setChecked(shown.is_boolean() && shown.get<bool>());
      connect(box, &QCheckBox::toggled, this, [this, name](bool on) { Commit(name, on); });
      return box;
    }
    case AttrType::kInts:
      if (IsFourInts(def)) {
        auto* w = new QWidget;
        auto* h = new QHBoxLayout(w);
        h->setContentsMargins(0, 0, 0, 0);
        h->setSpacing(4);
        std::vector<QLineEdit*> fields;
        for (int i = 0; i < 4; ++i) {
          auto* f = new QLineEdit;
          f->setValidator(new QIntValidator(f));
          f->setAlignment(Qt::AlignCenter);
          f->setMinimumWidth(36);
          if (shown.is_array() && static_cast<int>(shown.size()) > i && shown[static_cast<size_t>(i)].is_number()) {
            f->setText(QString::number(shown[static_cast<size_t>(i)].get<int64_t>()));
          }
          f->setObjectName(QString("%1_%2").arg(QString::fromStdString(name)).arg(i));
          h->addWidget(f);
          fields.push_back(f);
        }
        for (QLineEdit* f : fields) {
          connect(f, &QLineEdit::editingFinished, this, [this, fields, name] {
            nlohmann::json v = nlohmann::json::array();
            int empty = 0;
            for (QLineEdit* g : fields) {
              if (g->text().isEmpty()) {
                ++empty;
              } else {
                v.push_back(g->text().toLongLong());
              }
            }
            if (empty == 4) {
              Commit(name, nullptr);
            } else if (empty == 0) {
              Commit(name, v);
            } else {
              emit statusMessage(QString("%1 needs 4 integers").arg(QString::fromStdString(name)), true);
            }
          });
        }
        return w;
      }
      [[fallthrough]];
    case AttrType::kShape:
    case AttrType::kFloats: {
      auto* edit = new QLineEdit(FormatNumberList(current));
      edit->setPlaceholderText(def.default_value.is_null() ? (def.type == AttrType::kShape ? "e.g. 1, 8, 8, 2" : "")
                                                           : FormatNumberList(def.default_value));
      connect(edit, &QLineEdit::editingFinished, this, [this, edit, name] {
        if (edit->text().trimmed().isEmpty()) {
          Commit(name, nullptr);
          return;
        }
        QString err;
        nlohmann::json v = ParseNumberList(edit->text(), &err);
        if (v.is_null()) {
          edit->setStyleSheet(kErrorStyle);
          emit statusMessage(QString("%1: %2").arg(QString::fromStdString(name), err), true);
          return;
        }
        edit->setStyleSheet("");
        Commit(name, v);
      });
      return edit;
    }
    case AttrType::kInt:
    case AttrType::kFloat:
    case AttrType::kString:
    case AttrType::kAny:
    default: {
      const AttrType type = def.type;
      auto* edit = new QLineEdit(JsonText(current));
      edit->setPlaceholderText(JsonText(def.default_value));
      if (type == AttrType::kInt) {
        edit->setValidator(new QRegularExpressionValidator(QRegularExpression("[+-]?\\d*"), edit));
      }
      connect(edit, &QLineEdit::editingFinished, this, [this, edit, name, type] {
        const QString t = edit->text().trimmed();
        if (t.isEmpty()) {
          Commit(name, nullptr);
          return;
        }
        nlohmann::json v;
        bool ok = true;
        if (type == AttrType::kInt) {
          v = static_cast<int64_t>(t.toLongLong(&ok));
        } else if (type == AttrType::kFloat) {
          const double d = t.toDouble(&ok);
          ok = ok && std::isfinite(d);  // JSON has no NaN or Inf
          v = d;
        } else if (type == AttrType::kString) {
          v = t.toStdString();
        } else {
          v = nlohmann::json::parse(t.toStdString(), nullptr, /*allow_exceptions=*/false);
          ok = !v.is_discarded();
        }
        edit->setStyleSheet(ok ? "" : kErrorStyle);
        if (!ok) {
          emit statusMessage(QString("%1: '%2' is not a valid %3")
                                 .arg(QString::fromStdString(name), t,
                                      QString::fromStdString(std::string(AttrTypeName(type)))),
                             true);
          return;
        }
        Commit(name, v);
      });
      return edit;
    }
  }
}

QWidget* AttributePanel::MakeConstValueEditor() {
  const Node* node = doc_->graph().FindNode(id_);
  auto* w = new QWidget;
  auto* h = new QHBoxLayout(w);
  h->setContentsMargins(0, 0, 0, 0);
  h->setSpacing(4);
  auto* mode = new QComboBox;
  mode->addItems({"values", "fill", ".npy file"});
  mode->setObjectName("value_mode");
  auto* edit = new QLineEdit;
  edit->setObjectName("value_text");
  auto* browse = new QToolButton;
  browse->setText("…");
  browse->setToolTip("Choose a .npy file");
  h->addWidget(mode);
  h->addWidget(edit, 1);
  h->addWidget(browse);
  const nlohmann::json& attrs = node->attrs;
  int m = 0;
  if (attrs.contains("file")) {
    m = 2;
    edit->setText(JsonText(attrs["file"]));
  } else if (attrs.contains("value") && attrs["value"].is_number()) {
    m = 1;
    edit->setText(QString::fromStdString(attrs["value"].dump()));
  } else if (attrs.contains("value")) {
    edit->setText(FormatNumberList(attrs["value"]));
  }
  mode->setCurrentIndex(m);
  auto placeholder = [edit, browse](int mode_index) {
    static const char* kHints[] = {"row-major numbers: 1, 2, 3, 4", "one number that fills the shape",
                                   "file.npy, relative to the graph"};
    edit->setPlaceholderText(kHints[mode_index]);
    browse->setVisible(mode_index == 2);
  };
  placeholder(m);
  connect(mode, &QComboBox::activated, this, [placeholder, edit](int i) {
    placeholder(i);
    edit->clear();
    edit->setFocus();
  });
  auto commit = [this, mode, edit] {
    const QString t = edit->text().trimmed();
    nlohmann::json patch = {{"value", nullptr}, {"file", nullptr}};
    if (!t.isEmpty()) {
      if (mode->currentIndex() == 2) {
        patch["file"] = t.toStdString();
      } else {
        QString err;
        nlohmann::json v = ParseNumberList(t, &err);
        if (v.is_null() || (mode->currentIndex() == 1 && v.size() != 1)) {
          edit->setStyleSheet(kErrorStyle);
          emit statusMessage(err.isEmpty() ? QString("fill needs one number") : "value: " + err, true);
          return;
        }
        patch["value"] = mode->currentIndex() == 1 ? v[0] : v;
      }
    }
    edit->setStyleSheet("");
    CommitPatch(patch);
  };
  connect(edit, &QLineEdit::editingFinished, this, commit);
  connect(browse, &QToolButton::clicked, this, [this, edit, commit] {
    const QString f = QFileDialog::getOpenFileName(this, "Const value", QString::fromStdString(doc_->graph().base_dir),
                                                   "NumPy arrays (*.npy)");
    if (f.isEmpty()) return;
    edit->setText(RelativeToGraph(f));
    commit();
  });
  return w;
}

QWidget* AttributePanel::MakeFeedEditor() {
  const Node* node = doc_->graph().FindNode(id_);
  auto* w = new QWidget;
  auto* h = new QHBoxLayout(w);
  h->setContentsMargins(0, 0, 0, 0);
  h->setSpacing(4);
  auto* edit = new QLineEdit;
  edit->setObjectName("feed_text");
  edit->setPlaceholderText(".npy file fed when run from the editor");
  if (node->ui.is_object() && node->ui.contains("feed")) edit->setText(JsonText(node->ui["feed"]));
  auto* browse = new QToolButton;
  browse->setText("…");
  browse->setToolTip("Choose the .npy file to feed");
  h->addWidget(edit, 1);
  h->addWidget(browse);
  w->setToolTip("The .npy file fed to this Placeholder when the graph runs in the editor "
                "(kept in the node's ui.feed, relative to the graph file).");
  auto commit = [this, edit] {
    const QString t = edit->text().trimmed();
    const Status st = doc_->SetUiValue(id_, "feed", t.isEmpty() ? nlohmann::json() : nlohmann::json(t.toStdString()));
    if (!st.ok()) emit statusMessage(QString::fromStdString(st.message()), true);
  };
  connect(edit, &QLineEdit::editingFinished, this, commit);
  connect(browse, &QToolButton::clicked, this, [this, edit, commit] {
    const QString f = QFileDialog::getOpenFileName(this, "Feed", QString::fromStdString(doc_->graph().base_dir),
                                                   "NumPy arrays (*.npy)");
    if (f.isEmpty()) return;
    edit->setText(RelativeToGraph(f));
    commit();
  });
  return w;
}

void AttributePanel::Commit(const std::string& attr, const nlohmann::json& value) {
  const Node* node = doc_->graph().FindNode(id_);
  if (!node) return;
  const OpSchema* schema = doc_->registry().Find(node->op);
  const AttrDef* def = schema ? schema->FindAttr(attr) : nullptr;
  // Choosing the default of an unset attr changes nothing.
  if (!node->attrs.contains(attr) && def && value == def->default_value) return;
  const Status st = doc_->SetAttr(id_, attr, value);
  if (!st.ok()) emit statusMessage(QString::fromStdString(st.message()), true);
}

void AttributePanel::CommitPatch(const nlohmann::json& patch) {
  const Status st = doc_->SetAttrs(id_, patch);
  if (!st.ok()) emit statusMessage(QString::fromStdString(st.message()), true);
}

void AttributePanel::UpdateVisibility() {
  const Node* node = doc_->graph().FindNode(id_);
  if (!node || !form_) return;
  if (QWidget* w = EditorFor("explicit_paddings")) {
    std::string padding;
    if (node->attrs.contains("padding") && node->attrs["padding"].is_string()) {
      padding = node->attrs["padding"].get<std::string>();
    } else if (const OpSchema* s = doc_->registry().Find(node->op)) {
      if (const AttrDef* d = s->FindAttr("padding"); d && d->default_value.is_string()) {
        padding = d->default_value.get<std::string>();
      }
    }
    form_->setRowVisible(w, padding == "EXPLICIT");
  }
}

void AttributePanel::UpdateIssues() {
  if (!issues_) return;
  const Node* node = doc_->graph().FindNode(id_);
  if (!node) {
    issues_->clear();
    return;
  }
  const auto issues = doc_->IssuesFor(id_);
  if (!issues.empty()) {
    QStringList lines;
    for (const auto& s : issues) lines << QString::fromStdString(s).toHtmlEscaped();
    issues_->setText("<span style='color:#ff6b6f'>⚠ " + lines.join("<br>⚠ ") + "</span>");
    return;
  }
  QString text = "<span style='color:#5fd38d'>✓ valid</span>";
  if (const NodeInfo* info = doc_->InfoFor(id_)) {
    for (size_t i = 0; i < info->outputs.size(); ++i) {
      const PortInfo& p = info->outputs[i];
      text += QString("<br><span style='color:#aeb4bc'>output %1: %2 %3</span>")
                  .arg(i)
                  .arg(QString::fromStdString(std::string(DTypeName(p.dtype))),
                       QString::fromStdString(p.shape.ToString()));
    }
  }
  issues_->setText(text);
}

}  // namespace blockflow::editor
