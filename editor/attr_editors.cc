#include "editor/attr_editors.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleValidator>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QIntValidator>
#include <QLineEdit>
#include <QRegularExpression>
#include <QRegularExpressionValidator>
#include <QToolButton>
#include <cmath>
#include <vector>

namespace blockflow::editor {

namespace {

QString Q(std::string_view text) {
  return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

QWidget* MakeChoiceEditor(const AttrDef& def, const nlohmann::json& shown,
                          const AttrEditorHost& host) {
  auto* combo = new QComboBox;
  QStringList items;
  if (def.type == AttrType::kEnum) {
    for (const auto& a : def.allowed) items << QString::fromStdString(a);
  } else {
    for (DType d : AllDTypes()) items << Q(DTypeName(d));
  }
  if (shown.is_null()) items.prepend("");
  combo->addItems(items);
  if (shown.is_string()) combo->setCurrentText(QString::fromStdString(shown.get<std::string>()));
  QObject::connect(combo, &QComboBox::activated, combo, [combo, name = def.name, host] {
    const QString t = combo->currentText();
    host.commit(name, t.isEmpty() ? nlohmann::json() : nlohmann::json(t.toStdString()));
  });
  return combo;
}

// One field per value of a list with a fixed length, four to a row.
QWidget* MakeFieldsEditor(const AttrDef& def, const nlohmann::json& shown,
                          const AttrEditorHost& host) {
  const bool ints = def.type == AttrType::kInts;
  auto* w = new QWidget;
  auto* grid = new QGridLayout(w);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->setSpacing(4);
  std::vector<QLineEdit*> fields;
  for (int i = 0; i < def.length; ++i) {
    auto* f = new QLineEdit;
    if (ints) {
      f->setValidator(new QIntValidator(f));
    } else {
      f->setValidator(new QDoubleValidator(f));
    }
    f->setAlignment(Qt::AlignCenter);
    f->setMinimumWidth(36);
    const size_t u = static_cast<size_t>(i);
    if (shown.is_array() && shown.size() > u && shown[u].is_number()) {
      f->setText(ints ? QString::number(shown[u].get<int64_t>())
                      : QString::number(shown[u].get<double>()));
    }
    f->setObjectName(QString("%1_%2").arg(QString::fromStdString(def.name)).arg(i));
    grid->addWidget(f, i / 4, i % 4);
    fields.push_back(f);
  }
  for (QLineEdit* f : fields) {
    QObject::connect(f, &QLineEdit::editingFinished, f, [fields, ints, def, host] {
      nlohmann::json v = nlohmann::json::array();
      size_t empty = 0;
      for (QLineEdit* g : fields) {
        if (g->text().isEmpty()) {
          ++empty;
        } else if (ints) {
          v.push_back(g->text().toLongLong());
        } else {
          v.push_back(g->text().toDouble());
        }
      }
      if (empty == fields.size()) {
        host.commit(def.name, nullptr);
      } else if (empty == 0) {
        host.commit(def.name, v);
      } else {
        const QString reason = QString("%1 needs %2 %3")
                                   .arg(QString::fromStdString(def.name))
                                   .arg(def.length)
                                   .arg(ints ? "integers" : "numbers");
        for (QLineEdit* g : fields) MarkFieldError(g, g->text().isEmpty() ? reason : QString());
        host.report(reason, true);
      }
    });
  }
  return w;
}

QWidget* MakeNumberListEditor(const AttrDef& def, const nlohmann::json& current,
                              const AttrEditorHost& host) {
  auto* edit = new QLineEdit(FormatNumberList(current));
  edit->setPlaceholderText(def.default_value.is_null()
                               ? (def.type == AttrType::kShape ? "e.g. 1, 8, 8, 2" : "")
                               : FormatNumberList(def.default_value));
  QObject::connect(edit, &QLineEdit::editingFinished, edit, [edit, name = def.name, host] {
    if (edit->text().trimmed().isEmpty()) {
      host.commit(name, nullptr);
      return;
    }
    QString err;
    nlohmann::json v = ParseNumberList(edit->text(), &err);
    if (v.is_null()) {
      MarkFieldError(edit, err);
      host.report(QString("%1: %2").arg(QString::fromStdString(name), err), true);
      return;
    }
    MarkFieldError(edit, QString());
    host.commit(name, v);
  });
  return edit;
}

// The text of a scalar attribute as its JSON value; false when the text is not one.
bool ParseScalar(AttrType type, const QString& text, nlohmann::json* value) {
  bool ok = true;
  if (type == AttrType::kInt) {
    *value = static_cast<int64_t>(text.toLongLong(&ok));
  } else if (type == AttrType::kFloat) {
    const double d = text.toDouble(&ok);
    ok = ok && std::isfinite(d);  // JSON has no NaN or Inf
    *value = d;
  } else if (type == AttrType::kString) {
    *value = text.toStdString();
  } else {
    *value = nlohmann::json::parse(text.toStdString(), nullptr, /*allow_exceptions=*/false);
    ok = !value->is_discarded();
  }
  return ok;
}

QWidget* MakeScalarEditor(const AttrDef& def, const nlohmann::json& current,
                          const AttrEditorHost& host) {
  const AttrType type = def.type;
  auto* edit = new QLineEdit(JsonText(current));
  edit->setPlaceholderText(JsonText(def.default_value));
  if (type == AttrType::kInt) {
    edit->setValidator(new QRegularExpressionValidator(QRegularExpression("[+-]?\\d*"), edit));
  }
  QObject::connect(edit, &QLineEdit::editingFinished, edit, [edit, name = def.name, type, host] {
    const QString t = edit->text().trimmed();
    if (t.isEmpty()) {
      host.commit(name, nullptr);
      return;
    }
    nlohmann::json v;
    const bool ok = ParseScalar(type, t, &v);
    const QString reason = ok ? QString()
                              : QString("%1: '%2' is not a valid %3")
                                    .arg(QString::fromStdString(name), t, Q(AttrTypeName(type)));
    MarkFieldError(edit, reason);
    if (!ok) {
      host.report(reason, true);
      return;
    }
    host.commit(name, v);
  });
  return edit;
}

}  // namespace

void MarkFieldError(QWidget* field, const QString& reason) {
  if (!field || FieldError(field) == reason) return;
  if (!field->property("bf_error").isValid()) field->setProperty("bf_tooltip", field->toolTip());
  const QString plain = field->property("bf_tooltip").toString();
  if (reason.isEmpty()) {
    field->setStyleSheet("");
    field->setToolTip(plain);
    field->setProperty("bf_error", QVariant());
    field->setProperty("bf_tooltip", QVariant());
    return;
  }
  // Selectors so that a widget holding fields frames them, not itself.
  field->setStyleSheet("QLineEdit, QComboBox, QSpinBox, QCheckBox { border: 1px solid #e5484d; }");
  field->setToolTip("<span style='color:#ff6b6f'><b>" + reason.toHtmlEscaped() + "</b></span>" +
                    (plain.isEmpty() ? QString() : "<br><br>" + plain));
  field->setProperty("bf_error", reason);
}

QString FieldError(const QWidget* field) {
  return field ? field->property("bf_error").toString() : QString();
}

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
        if (error) {
          *error = QString("'%1' is not a finite number (a graph file cannot hold it)").arg(tok);
        }
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

QString JsonText(const nlohmann::json& value) {
  if (value.is_null()) return {};
  if (value.is_string()) return QString::fromStdString(value.get<std::string>());
  return QString::fromStdString(value.dump());
}

QString AttrTooltip(const AttrDef& def) {
  QString tip =
      QString("<b>%1</b> (%2)").arg(QString::fromStdString(def.name), Q(AttrTypeName(def.type)));
  if (!def.doc.empty()) tip += "<br>" + QString::fromStdString(def.doc).toHtmlEscaped();
  if (def.required) {
    tip += "<br><i>required</i>";
  } else if (!def.default_value.is_null()) {
    tip +=
        "<br><i>default:</i> " + QString::fromStdString(def.default_value.dump()).toHtmlEscaped();
  }
  if (!def.allowed.empty()) {
    QStringList a;
    for (const auto& s : def.allowed) a << QString::fromStdString(s);
    tip += "<br><i>one of:</i> " + a.join(", ");
  }
  return tip;
}

QString FileSuffix(FileKind kind) { return "." + Q(FileKindName(kind)); }

QToolButton* NewBrowseButton(FileKind kind) {
  auto* browse = new QToolButton;
  browse->setText("…");
  browse->setToolTip(QString("Choose a %1 file").arg(FileSuffix(kind)));
  return browse;
}

QWidget* MakeFileEditor(const FileField& field, const std::function<void(const QString&)>& commit,
                        const AttrEditorHost& host) {
  auto* w = new QWidget;
  auto* h = new QHBoxLayout(w);
  h->setContentsMargins(0, 0, 0, 0);
  h->setSpacing(4);
  auto* edit = new QLineEdit(field.text);
  edit->setObjectName(field.object_name);
  edit->setPlaceholderText(field.placeholder);
  QToolButton* browse = NewBrowseButton(field.kind);
  h->addWidget(edit, 1);
  h->addWidget(browse);
  QObject::connect(edit, &QLineEdit::editingFinished, edit,
                   [edit, commit] { commit(edit->text().trimmed()); });
  QObject::connect(browse, &QToolButton::clicked, edit, [edit, commit, field, host] {
    const QString f = host.choose_file(field.title, field.kind);
    if (f.isEmpty()) return;
    edit->setText(f);
    commit(f);
  });
  return w;
}

QWidget* MakeAttrEditor(const AttrDef& def, const nlohmann::json& current,
                        const AttrEditorHost& host) {
  const nlohmann::json shown = current.is_null() ? def.default_value : current;
  switch (def.type) {
    case AttrType::kEnum:
    case AttrType::kDType:
      return MakeChoiceEditor(def, shown, host);
    case AttrType::kBool: {
      auto* box = new QCheckBox;
      box->setChecked(shown.is_boolean() && shown.get<bool>());
      QObject::connect(box, &QCheckBox::toggled, box,
                       [name = def.name, host](bool on) { host.commit(name, on); });
      return box;
    }
    case AttrType::kInts:
    case AttrType::kFloats:
      if (def.length > 0) return MakeFieldsEditor(def, shown, host);
      return MakeNumberListEditor(def, current, host);
    case AttrType::kShape:
      return MakeNumberListEditor(def, current, host);
    case AttrType::kString:
      if (def.file_kind != FileKind::kNone) {
        const FileField field{JsonText(current), def.file_kind,
                              QString::fromStdString(def.name) + "_file", JsonText(shown),
                              QString::fromStdString(def.name)};
        return MakeFileEditor(
            field,
            [name = def.name, host](const QString& t) {
              host.commit(name, t.isEmpty() ? nlohmann::json() : nlohmann::json(t.toStdString()));
            },
            host);
      }
      return MakeScalarEditor(def, current, host);
    case AttrType::kInt:
    case AttrType::kFloat:
    case AttrType::kAny:
      return MakeScalarEditor(def, current, host);
  }
  return MakeScalarEditor(def, current, host);
}

}  // namespace blockflow::editor
