#include "editor/search.h"

#include <QRegularExpression>
#include <algorithm>
#include <limits>

#include "core/schema.h"

namespace blockflow::editor {

namespace {

constexpr int kNoMatch = std::numeric_limits<int>::min() / 4;

// Lower case, letters and digits only: "Depthwise conv_2d" → "depthwiseconv2d".
QString Normalized(const QString& s) {
  QString out;
  for (QChar c : s) {
    if (c.isLetterOrNumber()) out += c.toLower();
  }
  return out;
}

// The best score of `token` as a subsequence of `name` (lower case, letters and digits) whose
// first character sits at a word start; kNoMatch when it does not match. A match
// scores for every character, more at word starts and for runs, less for skipped characters.
int FuzzyScore(const QString& token, const QString& name, const std::vector<bool>& word_start) {
  const qsizetype m = token.size(), n = name.size();
  if (m == 0 || m > n) return kNoMatch;
  // best[j]: the best score of token[0..i] with token[i] matched at name[j].
  std::vector<int> best(static_cast<size_t>(n), kNoMatch), next(static_cast<size_t>(n), kNoMatch);
  for (qsizetype j = 0; j < n; ++j) {
    if (name[j] == token[0] && word_start[static_cast<size_t>(j)])
      best[static_cast<size_t>(j)] = 10;
  }
  for (qsizetype i = 1; i < m; ++i) {
    std::fill(next.begin(), next.end(), kNoMatch);
    for (qsizetype j = i; j < n; ++j) {
      if (name[j] != token[i]) continue;
      const int here = 1 + (word_start[static_cast<size_t>(j)] ? 6 : 0);
      int b = kNoMatch;
      for (qsizetype k = i - 1; k < j; ++k) {
        const int prev = best[static_cast<size_t>(k)];
        if (prev == kNoMatch) continue;
        const int link = k == j - 1 ? 4 : -static_cast<int>(std::min<qsizetype>(j - k - 1, 3));
        b = std::max(b, prev + here + link);
      }
      next[static_cast<size_t>(j)] = b;
    }
    std::swap(best, next);
  }
  return *std::max_element(best.begin(), best.end());
}

}  // namespace

QStringList NameWords(const QString& name) {
  QStringList words;
  QString cur;
  for (qsizetype i = 0; i < name.size(); ++i) {
    const QChar c = name[i];
    if (!c.isLetterOrNumber()) {
      if (!cur.isEmpty()) words << cur;
      cur.clear();
      continue;
    }
    if (c.isUpper() && !cur.isEmpty()) {
      const QChar prev = name[i - 1];
      const bool next_lower = i + 1 < name.size() && name[i + 1].isLower();
      // A word starts after a lower-case letter ("ConvBackprop"), where an acronym ends
      // ("NCHWInput": I starts "Input"), or after a digit when a lower-case letter follows
      // ("2DBackprop" keeps "2D" but starts "Backprop"; "Conv2D" stays one word).
      if (prev.isLower() || (prev.isUpper() && next_lower) || (prev.isDigit() && next_lower)) {
        words << cur;
        cur.clear();
      }
    }
    cur += c.toLower();
  }
  if (!cur.isEmpty()) words << cur;
  return words;
}

std::vector<OpSearchEntry> SearchEntries(const OpRegistry& registry) {
  std::vector<OpSearchEntry> out;
  for (const OpSchema* s : registry.All()) {
    out.push_back({s, QString::fromStdString(s->name()), QString::fromStdString(s->category()),
                   QString::fromStdString(s->doc())});
  }
  return out;
}

OpMatch MatchOp(const OpSearchEntry& entry, const QString& query) {
  const QString q = Normalized(query);
  if (q.isEmpty()) return {MatchTier::kExact, 0};
  const QString name = Normalized(entry.name);
  if (name == q) return {MatchTier::kExact, 0};
  if (name.startsWith(q)) return {MatchTier::kPrefix, 0};

  // Fuzzy: every word of the query matches the name's words (any order).
  const QStringList tokens =
      query.toLower().split(QRegularExpression("[^a-z0-9]+"), Qt::SkipEmptyParts);
  std::vector<bool> word_start(static_cast<size_t>(name.size()), false);
  qsizetype pos = 0;
  for (const QString& w : NameWords(entry.name)) {
    if (pos < name.size()) word_start[static_cast<size_t>(pos)] = true;
    pos += w.size();
  }
  int total = 0;
  bool all = !tokens.isEmpty();
  for (const QString& t : tokens) {
    const int s = FuzzyScore(t, name, word_start);
    if (s == kNoMatch) {
      all = false;
      break;
    }
    total += s;
  }
  if (all) return {MatchTier::kFuzzy, total};

  // Description and category: every word of the query appears.
  bool in_doc = !tokens.isEmpty();
  int where = 0;
  for (const QString& t : tokens) {
    const qsizetype at = entry.doc.indexOf(t, 0, Qt::CaseInsensitive);
    if (at >= 0) {
      where += static_cast<int>(at);
    } else if (!entry.category.contains(t, Qt::CaseInsensitive)) {
      in_doc = false;
      break;
    }
  }
  if (in_doc) return {MatchTier::kDescription, -where};  // earlier mentions first
  return {MatchTier::kNone, 0};
}

std::vector<int> RankOps(const std::vector<OpSearchEntry>& entries, const QString& query) {
  std::vector<int> order;
  std::vector<OpMatch> matches(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    matches[i] = MatchOp(entries[i], query);
    if (matches[i].tier != MatchTier::kNone) order.push_back(static_cast<int>(i));
  }
  if (Normalized(query).isEmpty()) return order;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const OpMatch& ma = matches[static_cast<size_t>(a)];
    const OpMatch& mb = matches[static_cast<size_t>(b)];
    if (ma.tier != mb.tier) return ma.tier < mb.tier;
    if (ma.score != mb.score) return ma.score > mb.score;
    const QString& na = entries[static_cast<size_t>(a)].name;
    const QString& nb = entries[static_cast<size_t>(b)].name;
    if (na.size() != nb.size()) return na.size() < nb.size();
    return na < nb;
  });
  return order;
}

int FittingPort(const OpSchema& schema, const WireFit& fit) {
  auto accepts = [](const std::vector<DType>& allowed, DType d) {
    return d == DType::kInvalid || allowed.empty() ||
           std::find(allowed.begin(), allowed.end(), d) != allowed.end();
  };
  if (fit.from_output) {
    const DType d = fit.dtypes.empty() ? DType::kInvalid : fit.dtypes[0];
    for (size_t i = 0; i < schema.inputs().size(); ++i) {
      if (accepts(schema.inputs()[i].dtypes, d)) return static_cast<int>(i);
    }
    return -1;
  }
  for (size_t k = 0; k < schema.outputs().size(); ++k) {
    const std::vector<DType>& gives = schema.outputs()[k].dtypes;
    if (fit.dtypes.empty() || gives.empty()) return static_cast<int>(k);
    for (DType d : gives) {
      if (accepts(fit.dtypes, d)) return static_cast<int>(k);
    }
  }
  return -1;
}

}  // namespace blockflow::editor
