#include "editor/attribute_panel.h"

#include <QApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QScrollArea>
#include <QVBoxLayout>
#include <algorithm>

#include "core/graph.h"
#include "editor/const_value_editor.h"
#include "editor/feed_editor.h"
#include "editor/graph_document.h"
#include "editor/inline_values.h"

namespace blockflow::editor {

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
  if (node->ui.is_object() && node->ui.contains("feed_random"))
    k["feed_random"] = node->ui["feed_random"];
  k["inline"] = InlineInputsKey(doc_->graph(), id_);
  k["wired"] = nlohmann::json::array();  // the inline rows show unwired inputs
  for (const auto& [port, eps] : node->inputs) k["wired"].push_back(port);
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
  return w && !hidden_rows_.count(name);
}

QString AttributePanel::IssueText() const { return issues_ ? issues_->text() : QString(); }

QString AttributePanel::RelativeToGraph(const QString& path) const {
  const QString base = QString::fromStdString(doc_->graph().base_dir);
  if (base.isEmpty() || path.isEmpty()) return path;
  return QDir(QFileInfo(base).absoluteFilePath())
      .relativeFilePath(QFileInfo(path).absoluteFilePath());
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
  hidden_rows_.clear();
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
  QString head = QString("<span style='font-size:11pt; font-weight:bold'>%1</span>")
                     .arg(QString::fromStdString(node->op));
  if (schema) {
    head += QString(" <span style='color:#8a919a'>%1</span>")
                .arg(QString::fromStdString(schema->category()));
    if (!schema->doc().empty()) {
      head += "<br><span style='color:#aeb4bc'>" +
              QString::fromStdString(schema->doc()).toHtmlEscaped() + "</span>";
    }
  }
  header_->setText(head);

  // Node id: unique and valid, checked as it is typed.
  auto* id_edit = new QLineEdit(QString::fromStdString(node->id));
  id_edit->setToolTip("Node id: unique; letters, digits and _ . - /");
  connect(id_edit, &QLineEdit::textEdited, this, [this, id_edit](const QString& text) {
    const std::string t = text.toStdString();
    const bool ok = t == id_ || (IsValidNodeId(t) && !doc_->graph().FindNode(t));
    const QString reason =
        ok ? QString()
           : (IsValidNodeId(t)
                  ? QString("id '%1' is already used").arg(text)
                  : QString("invalid id '%1': use letters, digits and _ . - /").arg(text));
    MarkFieldError(id_edit, reason);
    if (!ok) emit statusMessage(reason, true);
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
      MarkFieldError(id_edit, QString());
      emit statusMessage(QString::fromStdString(st.message()), true);
      return;
    }
    emit nodeRenamed(QString::fromStdString(t));
  });
  form_->addRow("id", id_edit);
  editors_["id"] = id_edit;

  if (schema) AddAttrRows(*schema, *node);
  AddInlineInputRows(
      form_, doc_, *node,
      [this](const QString& text, bool error) { emit statusMessage(text, error); }, &editors_);
  UpdateIssues();
  UpdateVisibility();
  if (!focused.empty()) {
    if (QWidget* w = EditorFor(focused)) w->setFocus();
  }
}

void AttributePanel::AddAttrRows(const OpSchema& schema, const Node& node) {
  const AttrEditorHost host = Host();
  for (const AttrDef& def : schema.attrs()) {
    const bool has_file_alternative =
        std::any_of(schema.attrs().begin(), schema.attrs().end(),
                    [&](const AttrDef& other) { return other.alternative_to == def.name; });
    if (has_file_alternative) continue;  // its row is the file attribute's value editor
    QWidget* editor;
    QString label_text = QString::fromStdString(def.name);
    if (!def.alternative_to.empty()) {
      const AttrDef* value = schema.FindAttr(def.alternative_to);
      editor = MakeConstValueEditor(*value, def, node.attrs, host);
      editor->setToolTip(AttrTooltip(*value) + "<br><br>" + AttrTooltip(def));
      label_text = QString::fromStdString(value->name);
      editors_[value->name] = editor;
    } else {
      const nlohmann::json current =
          node.attrs.contains(def.name) ? node.attrs[def.name] : nlohmann::json();
      editor = MakeAttrEditor(def, current, host);
      editor->setToolTip(AttrTooltip(def));
      if (def.required) label_text += " *";
    }
    auto* label = new QLabel(label_text);
    label->setToolTip(editor->toolTip());
    form_->addRow(label, editor);
    editors_[def.name] = editor;
  }
  for (const OutputDef& out : schema.outputs()) {
    if (out.feed_file == FileKind::kNone) continue;
    QWidget* w = MakeFeedEditor(
        node.ui, out.feed_file,
        [this](const QString& name) {
          const Status st = doc_->SetUiValue(
              id_, "feed", name.isEmpty() ? nlohmann::json() : nlohmann::json(name.toStdString()));
          if (!st.ok()) emit statusMessage(QString::fromStdString(st.message()), true);
        },
        host);
    form_->addRow("feed", w);
    editors_["feed"] = w;
    QWidget* random = MakeFeedRandomEditor(node.ui, [this](bool on) {
      const Status st = doc_->SetUiValue(id_, "feed_random", on ? nlohmann::json(true) : nullptr);
      if (!st.ok()) emit statusMessage(QString::fromStdString(st.message()), true);
    });
    form_->addRow("", random);
    editors_["feed_random"] = random;
    break;  // one feed per node (ui.feed)
  }
}

AttrEditorHost AttributePanel::Host() {
  AttrEditorHost host;
  host.commit = [this](const std::string& attr, const nlohmann::json& value) {
    Commit(attr, value);
  };
  host.commit_patch = [this](const nlohmann::json& patch) { CommitPatch(patch); };
  host.report = [this](const QString& text, bool error) { emit statusMessage(text, error); };
  host.choose_file = [this](const QString& title, FileKind kind) {
    return ChooseFile(title, kind);
  };
  return host;
}

QString AttributePanel::ChooseFile(const QString& title, FileKind kind) {
  const QString suffix = FileSuffix(kind);
  const QString f =
      QFileDialog::getOpenFileName(this, title, QString::fromStdString(doc_->graph().base_dir),
                                   QString("%1 files (*%1)").arg(suffix));
  return f.isEmpty() ? f : RelativeToGraph(f);
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
  const OpSchema* schema = doc_->registry().Find(node->op);
  if (!schema) return;
  for (const AttrDef& def : schema->attrs()) {
    if (def.visible_when.attr.empty()) continue;
    if (QWidget* w = EditorFor(def.name)) {
      const bool visible = AttrIsVisible(*schema, def, node->attrs);
      form_->setRowVisible(w, visible);
      if (visible) {
        hidden_rows_.erase(def.name);
      } else {
        hidden_rows_.insert(def.name);
      }
    }
  }
}

void AttributePanel::UpdateIssues() {
  if (!issues_) return;
  const Node* node = doc_->graph().FindNode(id_);
  if (!node) {
    issues_->clear();
    return;
  }
  MarkAttrFields();
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

void AttributePanel::MarkAttrFields() {
  // An attribute named by the node's analysis issues ("attr 'padding' is required", "strides
  // must have 4 values ...") gets a red frame and the reason in its tooltip.
  // One widget may edit two attributes (a Const's value or file): reasons are per widget.
  std::map<QWidget*, QStringList> reasons;
  for (const auto& [name, editor] : editors_) {
    if (name == "id" || name == "feed") continue;
    QStringList& r = reasons[editor];
    for (const NodeIssue& issue : doc_->analysis().issues) {
      const std::string& m = issue.message;
      if (issue.node_id == id_ &&
          (m.find("attr '" + name + "'") != std::string::npos || m.rfind(name + " ", 0) == 0 ||
           m.rfind(name + ":", 0) == 0) &&
          !r.contains(QString::fromStdString(m))) {
        r << QString::fromStdString(m);
      }
    }
  }
  for (const auto& [editor, r] : reasons) MarkFieldError(editor, r.join("\n"));
}

}  // namespace blockflow::editor
