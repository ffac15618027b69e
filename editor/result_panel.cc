#include "editor/result_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QPixmap>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>

namespace blockflow::editor {

namespace {

QString Num(double v) { return QString::number(v, 'g', 6); }

}  // namespace

// Draws an image as large as fits, keeping square elements (nearest-neighbour scaling).
class HeatmapView : public QWidget {
 public:
  HeatmapView() {
    setMinimumSize(120, 120);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  }
  void SetImage(QImage image) {
    image_ = std::move(image);
    update();
  }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.fillRect(rect(), QColor(0x17, 0x18, 0x1b));
    if (image_.isNull()) {
      p.setPen(QColor(0x8a, 0x91, 0x9a));
      p.drawText(rect(), Qt::AlignCenter, "(empty)");
      return;
    }
    const QRect area = rect().adjusted(6, 6, -6, -6);
    double scale = std::min(static_cast<double>(area.width()) / image_.width(),
                            static_cast<double>(area.height()) / image_.height());
    if (scale >= 1) scale = std::floor(scale);  // whole pixels per element when magnifying
    const QSizeF size(image_.width() * scale, image_.height() * scale);
    const QRectF target(area.center().x() - size.width() / 2 + 1,
                        area.center().y() - size.height() / 2 + 1, size.width(), size.height());
    p.setRenderHint(QPainter::SmoothPixmapTransform, false);
    p.drawImage(target, image_);
    p.setPen(QColor(0x33, 0x37, 0x3d));
    p.drawRect(target.adjusted(-1, -1, 0, 0));
  }

 private:
  QImage image_;
};

ResultPanel::ResultPanel(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(10, 8, 10, 8);
  v->setSpacing(6);
  title_ = new QLabel;
  title_->setWordWrap(true);
  v->addWidget(title_);
  body_ = new QWidget;
  auto* b = new QVBoxLayout(body_);
  b->setContentsMargins(0, 0, 0, 0);
  b->setSpacing(6);
  v->addWidget(body_, 1);

  output_combo_ = new QComboBox;
  b->addWidget(output_combo_);
  stats_ = new QLabel;
  stats_->setTextFormat(Qt::RichText);
  stats_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  b->addWidget(stats_);

  auto* sel = new QHBoxLayout;
  sel->setSpacing(6);
  layout_combo_ = new QComboBox;
  layout_combo_->addItems({"NHWC", "NCHW", "HWIO"});
  layout_combo_->setToolTip(
      "How a rank-4 tensor maps to rows and columns (from the output port's "
      "layout: the node's data_format, or HWIO for filters)");
  batch_label_ = new QLabel("batch");
  batch_spin_ = new QSpinBox;
  channel_label_ = new QLabel("channel");
  channel_spin_ = new QSpinBox;
  sel->addWidget(layout_combo_);
  sel->addWidget(batch_label_);
  sel->addWidget(batch_spin_);
  sel->addWidget(channel_label_);
  sel->addWidget(channel_spin_);
  sel->addStretch(1);
  b->addLayout(sel);

  image_view_ = new HeatmapView;
  auto* scale = new QHBoxLayout;
  scale_min_ = new QLabel;
  scale_max_ = new QLabel;
  colorbar_ = new QLabel;
  colorbar_->setPixmap(QPixmap::fromImage(ColorBarImage(160, 10)));
  scale->addStretch(1);
  scale->addWidget(scale_min_);
  scale->addWidget(colorbar_);
  scale->addWidget(scale_max_);
  scale->addStretch(1);
  per_slice_ = new QCheckBox("per slice");
  per_slice_->setToolTip(
      "Scale the colours to this slice's largest |value| (off: the whole tensor's, so that "
      "slices compare)");
  scale->addWidget(per_slice_);
  slice_note_ = new QLabel;
  slice_note_->setStyleSheet("color: #8a919a;");
  slice_note_->setAlignment(Qt::AlignCenter);

  auto* image_box = new QWidget;
  auto* ib = new QVBoxLayout(image_box);
  ib->setContentsMargins(0, 0, 0, 0);
  ib->setSpacing(3);
  ib->addWidget(image_view_, 1);
  ib->addLayout(scale);
  ib->addWidget(slice_note_);

  model_ = new TensorSliceModel(this);
  table_ = new QTableView;
  table_->setModel(model_);
  table_->horizontalHeader()->setDefaultSectionSize(86);
  table_->verticalHeader()->setDefaultSectionSize(20);
  table_->setAlternatingRowColors(true);
  QFont mono("DejaVu Sans Mono");
  mono.setPointSizeF(8);
  table_->setFont(mono);

  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(image_box);
  split->addWidget(table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setSizes({420, 200});
  split->setChildrenCollapsible(false);
  b->addWidget(split, 1);

  connect(output_combo_, &QComboBox::currentIndexChanged, this, [this](int k) {
    ShowLayoutOf(k);
    Refresh();
  });
  connect(layout_combo_, &QComboBox::currentIndexChanged, this, [this] { Refresh(); });
  connect(per_slice_, &QCheckBox::toggled, this, [this] { Refresh(); });
  connect(batch_spin_, &QSpinBox::valueChanged, this, [this] { Refresh(); });
  connect(channel_spin_, &QSpinBox::valueChanged, this, [this] { Refresh(); });
  ShowMessage("Run the graph (F5), then select a node to see its outputs.");
}

void ResultPanel::ShowMessage(const QString& message) {
  outputs_.clear();
  tensor_abs_max_.clear();
  shown_id_.clear();
  heatmap_ = QImage();
  image_view_->SetImage(QImage());
  model_->ClearSlice();
  title_->setText("<span style='color:#8a919a'>" + message.toHtmlEscaped() + "</span>");
  body_->hide();
}

void ResultPanel::ShowOutputs(const QString& node_id, const std::vector<Tensor>& outputs,
                              const QStringList& names, const QStringList& layouts,
                              const QString& note) {
  if (outputs.empty()) {
    ShowMessage(QString("No outputs of '%1' in the last run.").arg(node_id));
    return;
  }
  QString title = QString("<b>%1</b>").arg(node_id.toHtmlEscaped());
  if (!note.isEmpty()) title += " <span style='color:#8a919a'>" + note.toHtmlEscaped() + "</span>";
  title_->setText(title);
  // The same tensors again (the panels are refreshed after every change, a node move too):
  // keep the chosen output, layout, batch and channel, and skip recomputing.
  auto same_tensors = [&] {
    if (outputs.size() != outputs_.size()) return false;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Tensor &a = outputs[i], &b = outputs_[i];
      if (a.raw() != b.raw() || a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
    }
    return true;
  };
  if (node_id == shown_id_ && !body_->isHidden() && same_tensors()) return;
  outputs_ = outputs;
  tensor_abs_max_.clear();
  shown_id_ = node_id;
  {
    const QSignalBlocker b1(output_combo_), b2(layout_combo_), b3(batch_spin_), b4(channel_spin_);
    output_combo_->clear();
    for (size_t i = 0; i < outputs.size(); ++i) {
      const QString name =
          i < static_cast<size_t>(names.size()) ? names[static_cast<int>(i)] : QString("output");
      output_combo_->addItem(QString("output %1: %2").arg(i).arg(name));
    }
    output_combo_->setVisible(outputs.size() > 1);
    layouts_ = layouts;
    ShowLayoutOf(0);
    batch_spin_->setValue(0);
    channel_spin_->setValue(0);
  }
  body_->show();
  Refresh();
}

void ResultPanel::ShowLayoutOf(int output) {
  QString layout;
  if (!layouts_.isEmpty()) layout = layouts_[std::clamp<qsizetype>(output, 0, layouts_.size() - 1)];
  const QSignalBlocker block(layout_combo_);
  layout_combo_->setCurrentText(layout.isEmpty() ? "NHWC" : layout);
}

QString ResultPanel::StatsText() const { return stats_->text(); }

QString ResultPanel::LayoutText() const { return layout_combo_->currentText(); }

int ResultPanel::channel() const { return channel_spin_->value(); }
void ResultPanel::SetChannel(int channel) { channel_spin_->setValue(channel); }

void ResultPanel::Refresh() {
  const int k = std::max(output_combo_->currentIndex(), 0);
  if (k >= static_cast<int>(outputs_.size())) return;
  const Tensor& t = outputs_[static_cast<size_t>(k)];
  const TensorStats st = t.Stats();
  const QString cell =
      "<td style='padding-right:14px; color:#8a919a'>%1</td><td style='padding-right:18px'>%2</td>";
  QString html = "<table>";
  html += "<tr>" + cell.arg("dtype", QString::fromStdString(std::string(DTypeName(t.dtype())))) +
          cell.arg("shape", QString::fromStdString(t.shape().ToString())) + "</tr>";
  html += "<tr>" + cell.arg("min", Num(st.min)) + cell.arg("max", Num(st.max)) + "</tr>";
  html += "<tr>" + cell.arg("mean", Num(st.mean)) + cell.arg("count", QString::number(st.count)) +
          "</tr>";
  const QString bad = "<span style='color:#ff6b6f'>%1</span>";
  html += "<tr>" + cell.arg("NaN", st.nan_count ? bad.arg(st.nan_count) : "0") +
          cell.arg("Inf", st.inf_count ? bad.arg(st.inf_count) : "0") + "</tr>";
  html += "</table>";
  stats_->setText(html);

  const int layout_index = layout_combo_->currentIndex();
  const SliceLayout layout = layout_index == 1   ? SliceLayout::kNCHW
                             : layout_index == 2 ? SliceLayout::kHWIO
                                                 : SliceLayout::kNHWC;
  const Slice2D s = MakeSlice(t.shape(), layout, batch_spin_->value(), channel_spin_->value());
  {
    const QSignalBlocker b3(batch_spin_), b4(channel_spin_);
    auto last = [](int64_t n) {
      return static_cast<int>(std::clamp<int64_t>(n - 1, 0, std::numeric_limits<int>::max()));
    };
    batch_spin_->setRange(0, last(s.num_batches));
    channel_spin_->setRange(0, last(s.num_channels));
    batch_spin_->setValue(static_cast<int>(s.batch));
    channel_spin_->setValue(static_cast<int>(s.channel));
  }
  const bool rank4 = t.shape().rank() == 4;
  layout_combo_->setVisible(rank4);
  batch_label_->setText(s.batch_label);
  channel_label_->setText(s.channel_label);
  batch_label_->setVisible(s.num_batches > 1);
  batch_spin_->setVisible(s.num_batches > 1);
  channel_label_->setVisible(s.num_channels > 1);
  channel_spin_->setVisible(s.num_channels > 1);

  if (tensor_abs_max_.size() != outputs_.size()) {
    tensor_abs_max_.clear();
    for (const Tensor& o : outputs_) tensor_abs_max_.push_back(FiniteAbsMax(o));
  }
  double abs_max = 0;
  heatmap_ = HeatmapImage(t, s, &abs_max,
                          per_slice_->isChecked() ? 0.0 : tensor_abs_max_[static_cast<size_t>(k)]);
  scale_abs_max_ = abs_max;
  image_view_->SetImage(heatmap_);
  scale_min_->setText(Num(-abs_max));
  scale_max_->setText(Num(abs_max));
  QString note = QString("%1 × %2 slice").arg(s.rows).arg(s.cols);
  if (!s.description.isEmpty()) note += " · " + s.description;
  if (s.num_batches > 1) note += QString(" · %1 %2").arg(s.batch_label).arg(s.batch);
  if (s.num_channels > 1) note += QString(" · %1 %2").arg(s.channel_label).arg(s.channel);
  slice_note_->setText(note);
  model_->SetSlice(t, s);
}

}  // namespace blockflow::editor
